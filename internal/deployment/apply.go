package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Apply server-side-applies the worker Deployment of pool as FieldManager,
// forcing ownership of every field it declares, and returns the Deployment
// the API server stored. Pass a clientset's AppsV1(). It is idempotent:
// applying the same pool twice changes nothing the second time.
func Apply(ctx context.Context, c appsv1client.DeploymentsGetter, pool *v1alpha1.WorkerPool) (*appsv1.Deployment, error) {
	ac, err := Build(pool)
	if err != nil {
		return nil, err
	}
	d, err := c.Deployments(pool.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("deployment: applying %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return d, nil
}
