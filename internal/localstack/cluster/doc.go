// Package cluster runs a local Kubernetes cluster without a container
// runtime: etcd and kube-apiserver (package servers, through envtest), a
// kube-controller-manager with the controllers a Deployment, its pods and
// their nodes go through, a kube-scheduler, and kwok playing the kubelet of
// a small fleet of simulated nodes shaped like the sandbox classes' (see
// Fleet). Pods are scheduled, bound, marked Running and Ready, evicted and
// garbage-collected as in a real cluster; no container ever runs.
// docs/local-cluster.md tells what is simulated and what is not.
package cluster
