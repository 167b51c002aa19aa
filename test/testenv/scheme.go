package testenv

import (
	"k8s.io/apimachinery/pkg/runtime"

	"ate.dev/orchestrator/test/localstack/servers"
)

// NewScheme returns a scheme with client-go's built-in types and ate.dev/v1alpha1.
func NewScheme() *runtime.Scheme { return servers.NewScheme() }
