// Package v1alpha1 holds the ate.dev/v1alpha1 API: WorkerPools and the
// SandboxConfigs they resolve.
//
// It imports only the Kubernetes API machinery (k8s.io/apimachinery and
// k8s.io/api), so a client of the CRDs takes nothing else of the product's
// with it; test/arch checks that it stays so.
//
// +kubebuilder:object:generate=true
// +groupName=ate.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "ate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme:
	// apimachinery's builder, not controller-runtime's, which would take
	// controller-runtime into every importer of the API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// knownTypes are registered by each type's file (init), so a new kind is
// declared beside its type.
var knownTypes []runtime.Object

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
