package activities

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
)

// DeploymentResult is the outcome of applying a pool's Deployment.
type DeploymentResult struct {
	PoolGone   bool             `json:"poolGone,omitempty"`
	Deployment *DeploymentState `json:"deployment,omitempty"`
}

// ApplyDeployment server-side applies the pool's worker Deployment with a
// fixed field manager and forced ownership: fields other managers set are
// kept, fields this product owns are restored, and a field the pool's template
// no longer sets is removed. The workflow decides whether the gate allows it.
func (a *Activities) ApplyDeployment(ctx context.Context, ref PoolRef) (*DeploymentResult, error) {
	if err := validatePool(ref); err != nil {
		return nil, err
	}
	var pool v1alpha1.WorkerPool
	if err := a.Live.Get(ctx, poolKey(ref), &pool); err != nil {
		if apierrors.IsNotFound(err) {
			return &DeploymentResult{PoolGone: true}, nil
		}
		return nil, fmt.Errorf("reading WorkerPool %s to apply its Deployment: %w", ref, err)
	}
	if ref.UID != "" && string(pool.UID) != ref.UID {
		return &DeploymentResult{PoolGone: true}, nil
	}
	ac, err := deployment.Build(&pool)
	if err != nil {
		return nil, invalidInput("building the Deployment of WorkerPool %s: %v", ref, err)
	}
	d, err := a.Clientset.AppsV1().Deployments(pool.Namespace).Apply(ctx, ac,
		metav1.ApplyOptions{FieldManager: deployment.FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("applying the Deployment of WorkerPool %s: %w", ref, err)
	}
	return &DeploymentResult{Deployment: deploymentState(d)}, nil
}
