package servers

import (
	"k8s.io/apimachinery/pkg/runtime"

	"ate.dev/orchestrator/internal/kube"
)

// NewScheme returns the product's scheme (kube.Scheme): client-go's
// built-in types and ate.dev/v1alpha1.
func NewScheme() *runtime.Scheme { return kube.Scheme }
