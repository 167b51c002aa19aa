package activities

import (
	"context"
	"fmt"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
)

// SyncInput is what a pool pass writes besides switches: the Resolved
// condition of classes that did not switch, the Deployment's replica fields
// and the generation the pass acted on.
type SyncInput struct {
	Pool       PoolRef          `json:"pool"`
	Generation int64            `json:"generation"`
	Classes    []ClassSync      `json:"classes,omitempty"`
	Deployment *DeploymentState `json:"deployment,omitempty"`
}

// ClassSync is the outcome of resolution for a class that did not switch.
type ClassSync struct {
	Class    v1alpha1.SandboxClass `json:"class"`
	Resolved bool                  `json:"resolved"`
	Reason   string                `json:"reason"`
	Message  string                `json:"message"`
	// ClearConfig drops a configRef that may not be kept: its config is
	// gone, changed class, or is in deletion without the finalizer.
	ClearConfig bool `json:"clearConfig,omitempty"`
	// ClearPending drops a claim no switch is working on (left by a switch
	// that was terminated by hand).
	ClearPending bool `json:"clearPending,omitempty"`
}

// SyncStatus writes the pass's conditions, replica fields and
// observedGeneration, if they changed. Classes not named keep their status.
func (a *Activities) SyncStatus(ctx context.Context, in SyncInput) (*PoolWrite, error) {
	return a.updateStatus(ctx, in.Pool, "", "writing status", func(pool *v1alpha1.WorkerPool) {
		for _, c := range in.Classes {
			entry := poolstatus.EnsureClass(&pool.Status, c.Class)
			if c.ClearConfig {
				entry.ConfigRef = nil
			}
			if c.ClearPending {
				entry.PendingConfigRef = nil
			}
			poolstatus.SetClassCondition(&pool.Status, c.Class,
				poolstatus.ClassCondition(c.Resolved, c.Reason, c.Message, in.Generation))
		}
		if d := in.Deployment; d != nil {
			pool.Status.Replicas = d.Replicas
			pool.Status.ReadyReplicas = d.ReadyReplicas
			pool.Status.Selector = d.Selector
		}
		if in.Generation > pool.Status.ObservedGeneration {
			pool.Status.ObservedGeneration = in.Generation
		}
	})
}

// String helps error messages name the pass.
func (in SyncInput) String() string {
	return fmt.Sprintf("status of WorkerPool %s at generation %d", in.Pool, in.Generation)
}
