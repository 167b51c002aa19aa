//go:build tools

// Package tools pins kube-apiserver, built from k8s.io/kubernetes for the
// local stack and envtest.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
