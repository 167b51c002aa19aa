// Package e2e runs the product end to end: the worker and the starter
// against a real kube-apiserver+etcd and a real Temporal dev server, driven
// only through the Kubernetes API, as a user drives it.
package e2e
