package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/wfapi"
)

// A switch step that keeps failing (an admission webhook or policy refusing
// the finalizer patch, RBAC Forbidden, a quota) retries with backoff for as
// long as it fails. So that the pool says why it does not move, the step
// itself, on its reportStepFailureAfter-th failed attempt and every one
// after, sets a condition on the class and records a Warning, keyed so that
// retries add nothing (v1alpha1.ConditionSwitchStepFailing,
// v1alpha1.EventReasonSwitchStepFailing; see the README's Failure behaviour).

// The steps that report themselves. They are the steps a status write of
// the same switch follows, so the condition never outlives the failure.
const (
	StepProtect      = "Protect"
	StepClaim        = "Claim"
	StepConfirm      = "Confirm"
	StepRollBack     = "RollBack"
	StepAbandonClaim = "AbandonClaim"
)

// reportStepFailureAfter is the attempt from which a failing step reports:
// with the retry policy's 0.2 s doubling, after about 1.4 s of failures,
// long enough for a conflict or a blip to clear on its own, short enough
// that the pool shows the failure at once to someone looking.
const reportStepFailureAfter = 4

// reportTimeout bounds the report, so a report to a slow API server does not
// eat the attempt's own time.
const reportTimeout = 3 * time.Second

// reportStepFailure reports *errp, the error a step of a switch is about to
// return, on the class of the pool, when the attempt is one that reports.
// It is deferred by the steps, so a step that succeeds costs nothing; it
// never changes the step's error. A report that fails (the API server the
// step could not reach is down) is only logged: the step's retry reports
// again.
func (a *Activities) reportStepFailure(ctx context.Context, step string, pool wfapi.PoolRef, class v1alpha1.SandboxClass, errp *error) {
	if *errp == nil || !activity.IsActivity(ctx) {
		return
	}
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity {
		// The SDK logs a failed attempt of a regular activity ("Activity
		// error."), not of a local one: every step of a switch is local,
		// so say it here, once per attempt, as the SDK would.
		a.logger(ctx).Warn("Local activity error.", "step", step, "pool", pool.String(), "class", class, "Attempt", info.Attempt, "Error", (*errp).Error())
	}
	a.reportFailure(ctx, info.Attempt, info.WorkflowExecution.RunID, step, pool, class, *errp)
}

// reportFailure is reportStepFailure once the attempt and the switch run are
// known.
func (a *Activities) reportFailure(ctx context.Context, attempt int32, runID, step string, pool wfapi.PoolRef, class v1alpha1.SandboxClass, err error) {
	if attempt < reportStepFailureAfter || ctx.Err() != nil || pool.UID == "" || class == "" || validatePool(pool) != nil {
		return
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return // fails the switch at once: the workflow says why
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	message := StepFailureMessage(step, err)
	ours, werr := a.setStepFailure(ctx, pool, class, step, message)
	if werr != nil {
		a.logger(ctx).Warn("could not set the failing step's condition", "pool", pool.String(), "class", class, "step", step, "error", werr)
	}
	if !ours {
		return // the pool is gone, or another under its name: nothing to report on
	}
	if werr := a.RecordEvent(ctx, StepFailureWarning(pool, class, step, message, runID)); werr != nil {
		a.logger(ctx).Warn("could not record the failing step's Warning", "pool", pool.String(), "class", class, "step", step, "error", werr)
	}
}

func (a *Activities) logger(ctx context.Context) interface{ Warn(string, ...any) } {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	return slog.Default()
}

// StepFailureMessage is the condition's message: the step and its error.
// It carries no attempt count, so the same error on every retry is the same
// condition and the same event.
func StepFailureMessage(step string, err error) string {
	return truncate(fmt.Sprintf("%s keeps failing, retrying with backoff: %v", step, err), 4096)
}

// StepFailureWarning is the Warning of one distinct error of a step of one
// switch run: a retry, even after a worker crash, names the same event.
func StepFailureWarning(pool wfapi.PoolRef, class v1alpha1.SandboxClass, step, message, runID string) events.PoolEvent {
	return events.PoolEvent{
		Pool: pool, Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonSwitchStepFailing, Action: step,
		Note: fmt.Sprintf("sandbox class %q: %s", class, message),
		Key:  fmt.Sprintf("step-failure/%s/%s/%s/%s", runID, class, step, message),
	}
}

// setStepFailure sets the class's SwitchStepFailing condition, and the
// pool's summary that reports it, writing nothing when they already say
// this. It reports whether the pool is the
// switch's (true too when it could not tell: the Warning is still due).
func (a *Activities) setStepFailure(ctx context.Context, ref wfapi.PoolRef, class v1alpha1.SandboxClass, step, message string) (bool, error) {
	ours := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pool v1alpha1.WorkerPool
		if err := a.Live.Get(ctx, poolKey(ref), &pool); err != nil {
			if apierrors.IsNotFound(err) {
				ours = false // gone: the step finds out itself
				return nil
			}
			return fmt.Errorf("reading WorkerPool %s: %w", ref, err)
		}
		if string(pool.UID) != ref.UID {
			ours = false // another pool under the name: not this switch's
			return nil
		}
		entry := poolstatus.EnsureClass(&pool.Status, class)
		c := meta.FindStatusCondition(entry.Conditions, v1alpha1.ConditionSwitchStepFailing)
		same := c != nil && c.Status == metav1.ConditionTrue && c.Reason == step && c.Message == message
		if !same {
			meta.SetStatusCondition(&entry.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionSwitchStepFailing, Status: metav1.ConditionTrue,
				Reason: step, Message: message, ObservedGeneration: pool.Generation,
			})
		}
		// The summary says the move fails (poolstatus.Summary), so that
		// SandboxConfigResolved is not True while the pool waits for it.
		if summaryChanged := poolstatus.SetSummary(&pool); same && !summaryChanged {
			return nil
		}
		if err := a.Live.Status().Update(ctx, &pool); err != nil {
			return fmt.Errorf("setting %s on WorkerPool %s: %w", v1alpha1.ConditionSwitchStepFailing, ref, err)
		}
		return nil
	})
	return ours, err
}

// clearStepFailures removes every class's SwitchStepFailing condition. Every
// status write of a switch does it: one switch runs per pool, so a write of
// the switch means the step that failed has since succeeded (or been left
// behind for another path), and the condition would only mislead.
func clearStepFailures(status *v1alpha1.WorkerPoolStatus) {
	for i := range status.SandboxClasses {
		meta.RemoveStatusCondition(&status.SandboxClasses[i].Conditions, v1alpha1.ConditionSwitchStepFailing)
	}
}
