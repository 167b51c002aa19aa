//go:build tools

// Package tools pins the Kubernetes control plane built from k8s.io/kubernetes
// for the local stack and envtest: kube-apiserver, and the
// kube-controller-manager and kube-scheduler of the local cluster, and
// kubectl, which deploy's TestKubeSetupScript runs
// hack/compose/kube-setup.sh with, all four from this one module so they
// share its version.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
