package poolkeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/wfapi"
)

// kept is what a pass did about the pool's Deployment.
type kept struct {
	// deployment is the pool's own Deployment as it is, nil when there is
	// none.
	deployment *appsv1.Deployment
	// condition is the DeploymentApplied condition to set, nil when the
	// pool is not due a Deployment yet.
	condition *metav1.Condition
	// failure is why the Deployment is not as wanted, nil when it is. The
	// pass returns it once the condition is written and reported, so the
	// pool is looked at again on the controller's backoff: nothing else
	// would wake it (a refusal lifted, a foreign Deployment deleted, a
	// quota raised send the pool no event).
	failure error
}

func appliedCondition(pool *v1alpha1.WorkerPool) *metav1.Condition {
	return &metav1.Condition{
		Type:               v1alpha1.ConditionDeploymentApplied,
		Status:             metav1.ConditionTrue,
		Reason:             v1alpha1.ReasonDeploymentApplied,
		Message:            fmt.Sprintf("Deployment %q is as the pool asks", pool.Name),
		ObservedGeneration: pool.Generation,
	}
}

func failedCondition(pool *v1alpha1.WorkerPool, reason, message string) *metav1.Condition {
	return &metav1.Condition{
		Type:               v1alpha1.ConditionDeploymentApplied,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: pool.Generation,
	}
}

// notOwned is the outcome of a Deployment of the pool's name that another
// owner controls, or that nobody does: applying with forced ownership would
// take its fields over, so the pool reports it and waits for it to go.
func notOwned(pool *v1alpha1.WorkerPool, d *appsv1.Deployment) kept {
	owner := "nothing"
	if ref := metav1.GetControllerOf(d); ref != nil {
		owner = fmt.Sprintf("%s %q", ref.Kind, ref.Name)
	}
	msg := fmt.Sprintf("Deployment %q exists and is controlled by %s, not by this WorkerPool: it is not applied over; delete it, or give the pool another name", d.Name, owner)
	return kept{
		condition: failedCondition(pool, v1alpha1.ReasonDeploymentNotOwned, msg),
		failure:   fmt.Errorf("the Deployment of WorkerPool %s/%s: %s", pool.Namespace, pool.Name, msg),
	}
}

// applyFailed is the outcome of a Deployment that could not be built or
// applied. One the pool's spec cannot make (Build refuses it, or the API
// server calls the apply Invalid) is terminal for the pool's generation:
// it is reported, not retried (see invalidAtGeneration); a change of the
// spec tries again.
func applyFailed(pool *v1alpha1.WorkerPool, err error) kept {
	reason, msg := v1alpha1.ReasonDeploymentApplyFailed, err.Error()
	var invalid *deployment.InvalidPoolError
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &invalid):
		return kept{condition: failedCondition(pool, v1alpha1.ReasonDeploymentInvalid,
			fmt.Sprintf("the Deployment cannot be built: %v", invalid.Err))}
	case refusedAsInvalid(err):
		errors.As(err, &status)
		return kept{condition: failedCondition(pool, v1alpha1.ReasonDeploymentInvalid,
			fmt.Sprintf("applying Deployment %q: %s; not retried until the WorkerPool's spec changes", pool.Name, status.Status().Message))}
	case errors.As(err, &status):
		// The API server's own words (an admission policy's message, the
		// quota exceeded), without the client's wrapping.
		msg = fmt.Sprintf("applying Deployment %q: %s", pool.Name, status.Status().Message)
	}
	return kept{
		condition: failedCondition(pool, reason, msg),
		failure:   fmt.Errorf("keeping the Deployment of WorkerPool %s/%s: %w", pool.Namespace, pool.Name, err),
	}
}

// refusedAsInvalid reports whether the API server's own validation refused
// the Deployment: an Invalid error whose causes name a field of it. An
// admission policy's denial is Invalid too by default (a
// ValidatingAdmissionPolicy's reason), but names no field: it is the
// cluster's, may be lifted without a change to the pool, and is retried.
func refusedAsInvalid(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field != "" {
			return true
		}
	}
	return false
}

// invalidAtGeneration returns the pool's DeploymentApplied condition when
// it says the Deployment of the pool's current generation is invalid: the
// same spec makes the same Deployment, refused the same way, so it is not
// built or applied again (no apply every 30 s, forever) until the spec
// changes. It lives in the status, so a restarted keeper, or another one,
// knows it too.
func invalidAtGeneration(pool *v1alpha1.WorkerPool) *metav1.Condition {
	c := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.ConditionDeploymentApplied)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonDeploymentInvalid || c.ObservedGeneration != pool.Generation {
		return nil
	}
	return c.DeepCopy()
}

// deploymentWarning is the Warning of one appearance of a Deployment
// failure: the DeploymentApplied condition False with this reason and
// message since its lastTransitionTime. Like events.FailureWarning, a
// failure that clears and comes back is a new appearance and is reported
// again, and a changed reason or message (a new transition time too, so
// also when it changes back) is a new event; the same one,
// seen again by any pass or after a crash, is recorded once.
func deploymentWarning(pool wfapi.PoolRef, c *metav1.Condition) events.PoolEvent {
	return events.PoolEvent{
		Pool: pool, Type: corev1.EventTypeWarning, Reason: c.Reason, Action: "Apply", Note: c.Message,
		Key: fmt.Sprintf("deployment/%s/%s/%s", c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339)),
	}
}

// record records ev unless this process already did. An event whose pool's
// namespace is being deleted or is gone cannot be recorded by any retry
// (and the pool goes with its namespace): it is said, and counted as
// recorded, as the RecordEvent activity does.
func (r *Reconciler) record(ctx context.Context, pe events.PoolEvent) error {
	ev := pe.Event()
	name := ev.Name()
	if r.reported.has(name) {
		return nil
	}
	if err := r.Events.Record(ctx, ev); err != nil {
		if !events.NoNamespace(err) {
			return err
		}
		slog.Default().Warn("the event cannot be recorded: the pool's namespace is being deleted or is gone",
			"pool", pe.Pool.String(), "uid", pe.Pool.UID, "reason", pe.Reason, "event", name, "error", err.Error())
	}
	r.reported.add(name)
	return nil
}
