package activities

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// Observation is what a pool pass decides on: the pool, every SandboxConfig
// and the pool's Deployment, all read live. Live, not from a cache: the
// starter wakes the pool because its own cache saw a change, and a pass that
// read an older cache than the starter's would see nothing to do and never be
// woken again. The API server answers these reads from its watch cache.
type Observation struct {
	Exists     bool                              `json:"exists"`
	UID        string                            `json:"uid,omitempty"`
	Generation int64                             `json:"generation,omitempty"`
	Spec       []v1alpha1.WorkerPoolSandboxClass `json:"spec,omitempty"`
	Status     v1alpha1.WorkerPoolStatus         `json:"status"`
	Configs    []resolve.Config                  `json:"configs,omitempty"`
	Deployment *DeploymentState                  `json:"deployment,omitempty"`
	// DeploymentUpToDate says that applying the pool's Deployment would
	// change nothing (see deployment.UpToDate), so the pass need not apply
	// it; false means apply.
	DeploymentUpToDate bool `json:"deploymentUpToDate,omitempty"`
	// ResourceVersion is the pool's, as read: the claim of a switch the pass
	// runs writes on it without reading the pool again (see updateStatus).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Canary says the pool is labelled sandboxconfig.ate.dev/canary: "true":
	// a staged rollout admits it before the others of its class.
	Canary bool `json:"canary,omitempty"`
}

// NextMove is the move the observation asks of pool (its UID taken from the
// observation), as the starter plans it from its cache; false when the pool
// is gone or up to date. A switch started with no input plans its move with
// it.
func (o *Observation) NextMove(pool wfapi.PoolRef) (wfapi.SwitchInput, bool) {
	if !o.Exists {
		return wfapi.SwitchInput{}, false
	}
	m, ok := resolve.NextMove(resolve.Pool{Namespace: pool.Namespace, Name: pool.Name, Canary: o.Canary}, o.Spec, &o.Status, o.Configs)
	if !ok {
		return wfapi.SwitchInput{}, false
	}
	pool.UID = o.UID
	return wfapi.MoveInput(pool, m, o.Generation, o.ResourceVersion), true
}

// DeploymentState is the part of a pool's Deployment its status mirrors.
type DeploymentState struct {
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int32  `json:"readyReplicas"`
	Selector      string `json:"selector"`
}

// Observe reads a pool, the SandboxConfigs and the pool's Deployment.
func (a *Activities) Observe(ctx context.Context, ref wfapi.PoolRef) (*Observation, error) {
	if err := validatePool(ref); err != nil {
		return nil, err
	}
	var pool v1alpha1.WorkerPool
	if err := a.Live.Get(ctx, poolKey(ref), &pool); err != nil {
		if apierrors.IsNotFound(err) {
			return &Observation{}, nil
		}
		return nil, fmt.Errorf("reading WorkerPool %s: %w", ref, err)
	}
	obs := &Observation{
		Exists:          true,
		UID:             string(pool.UID),
		ResourceVersion: pool.ResourceVersion,
		Generation:      pool.Generation,
		Spec:            pool.Spec.SandboxClasses,
		Status:          pool.Status,
		Canary:          rollout.KeyOf(&pool).Canary,
	}

	var configs v1alpha1.SandboxConfigList
	if err := a.Live.List(ctx, &configs); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs for WorkerPool %s: %w", ref, err)
	}
	obs.Configs = resolve.ConfigsFrom(configs.Items)

	var d appsv1.Deployment
	switch err := a.Live.Get(ctx, poolKey(ref), &d); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the Deployment of WorkerPool %s: %w", ref, err)
	case metav1.IsControlledBy(&d, &pool):
		obs.Deployment = deploymentState(&d)
		// An error is Build's: leave it to ApplyDeployment to report.
		obs.DeploymentUpToDate, _ = deployment.UpToDate(&d, &pool)
	}
	return obs, nil
}

func deploymentState(d *appsv1.Deployment) *DeploymentState {
	s := &DeploymentState{Replicas: d.Status.Replicas, ReadyReplicas: d.Status.ReadyReplicas}
	if d.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			s.Selector = sel.String()
		}
	}
	return s
}
