// Package kubeclient builds the Kubernetes client every binary of the
// repository talks to the API server with: the scheme of the built-in types
// and ate.dev/v1alpha1, and a live (uncached) client. It links nothing
// else of the product, so a client such as the kubectl plugin takes it
// without package kube's cluster naming (and the Temporal SDK behind it).
package kubeclient

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Scheme knows the built-in types and ate.dev/v1alpha1.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()

// Live is a client that talks to the API server directly, with no cache.
func Live(cfg *rest.Config) (ctrlclient.WithWatch, error) {
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
