// Package cached holds the cache transforms of the worker's and the
// starter's informers: what each process keeps of the objects it watches.
// Both cache every WorkerPool and SandboxConfig (the worker also every
// pool's Deployment, see deployment.ForCache), so what a cached object
// carries and nobody reads is paid once per pool, per replica. Each
// transform keeps exactly what its process reads; its tests list those
// fields.
//
// A cached object is never written back whole: the only writes from a
// cached pool are status updates (the keeper's, the activities' first
// try), and the status subresource takes nothing but the status from the
// request, so a stripped spec or annotation cannot reach the API server.
package cached

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// LastAppliedAnnotation is kubectl's copy of the last applied manifest: as
// large as the object's spec, and read by nobody here.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripUnread is the default transform of both processes' caches: it drops
// every object's managedFields (nothing reads them; the Deployments' own
// entry is deployment.ForCache's business) and kubectl's last-applied
// annotation. A SandboxConfig's other annotations stay: resolution reads
// its class-default annotation.
func StripUnread(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
		if a := o.GetAnnotations(); a != nil {
			if _, ok := a[LastAppliedAnnotation]; ok {
				delete(a, LastAppliedAnnotation)
				o.SetAnnotations(a)
			}
		}
	}
	return obj, nil
}

// WorkerPool is the worker's transform for WorkerPools: no managedFields
// and no annotations (the product reads none of a pool's; its labels stay,
// for the canary label). The spec stays whole: the keeper builds the
// pool's Deployment from it, template and image included.
func WorkerPool(obj any) (any, error) {
	pool, ok := obj.(*v1alpha1.WorkerPool)
	if !ok {
		return StripUnread(obj)
	}
	pool.ManagedFields = nil
	pool.Annotations = nil
	return pool, nil
}

// StarterWorkerPool is the starter's transform for WorkerPools: the
// worker's, and the spec's worker pod template and image too. The starter
// plans moves from the pool's metadata (name, namespace, UID, generation,
// resourceVersion, deletion, the canary label), spec.sandboxClasses and
// status; it never builds a Deployment.
func StarterWorkerPool(obj any) (any, error) {
	pool, ok := obj.(*v1alpha1.WorkerPool)
	if !ok {
		return StripUnread(obj)
	}
	if _, err := WorkerPool(pool); err != nil {
		return nil, err
	}
	pool.Spec.Template = nil
	pool.Spec.WorkerImage = ""
	return pool, nil
}
