package events

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// The kinds of the objects the product records events about.
const (
	KindWorkerPool    = "WorkerPool"
	KindSandboxConfig = "SandboxConfig"
)

// Pool is the reference of an event about a WorkerPool. The UID names the
// incarnation, so that `kubectl describe` of a pool recreated under the
// same name does not show its predecessor's events.
func Pool(ref wfapi.PoolRef) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       KindWorkerPool,
		Namespace:  ref.Namespace,
		Name:       ref.Name,
		UID:        types.UID(ref.UID),
	}
}

// Config is the reference of an event about a SandboxConfig (cluster
// scoped: no namespace; its events live in the default one).
func Config(name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       KindSandboxConfig,
		Name:       name,
		UID:        uid,
	}
}
