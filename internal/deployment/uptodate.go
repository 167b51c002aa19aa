package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// UpToDate reports whether applying pool's Deployment to d would change
// nothing: the fields FieldManager owns on d (its managed fields of the last
// apply) are exactly the ones Build declares, with the same values. A field
// someone else edited since is no longer owned by FieldManager (ownership
// moves to the editor), so it shows as a difference and the next apply,
// forced, restores it; fields only other managers set are not compared.
//
// Should the API server or an admission webhook store an owned field
// differently from how Build declares it, the Deployment never looks up to
// date and every pass applies, as every pass did before this check: a cost,
// never a missed apply. It fails only when Build does.
func UpToDate(d *appsv1.Deployment, pool *v1alpha1.WorkerPool) (bool, error) {
	want, err := Build(pool)
	if err != nil {
		return false, err
	}
	have, err := appsv1ac.ExtractDeployment(d, FieldManager)
	if err != nil {
		return false, fmt.Errorf("deployment: extracting the fields %s owns on %s/%s: %w", FieldManager, d.Namespace, d.Name, err)
	}
	return equality.Semantic.DeepEqual(have, want), nil
}

// KeepOwnManagedFields is the worker's cache transform for Deployments:
// it drops every managedFields entry but the product's own, which
// UpToDate reads (ExtractDeployment takes the fields FieldManager applied
// from them). The controller manager's entries, rewritten on every status
// update, are most of a Deployment's managedFields, and the cache holds one
// Deployment per pool. Stripping them all, as for pools and configs, would
// make every Deployment look not up to date and re-apply it on each of its
// status changes.
func KeepOwnManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	var own []metav1.ManagedFieldsEntry
	for _, e := range o.GetManagedFields() {
		if e.Manager == FieldManager {
			own = append(own, e)
		}
	}
	o.SetManagedFields(own)
	return obj, nil
}
