// Package kube builds the Kubernetes clients, and the controller-runtime
// manager, both processes share.
package kube

import (
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kubeclient"
)

// Scheme knows the built-in types and ate.dev/v1alpha1 (kubeclient.Scheme).
var Scheme = kubeclient.Scheme

// LiveClient is a client that talks to the API server directly, with no
// cache (kubeclient.Live).
func LiveClient(cfg *rest.Config) (ctrlclient.WithWatch, error) { return kubeclient.Live(cfg) }
