package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
