package servers

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
)

// NewScheme returns a scheme with client-go's built-in types and ate.dev/v1alpha1.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(atev1alpha1.AddToScheme(s))
	return s
}
