package workflows

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"

	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// analysisChange is the GetVersion change ID of the rollout that measures
// a step's spec.rollout.analysis and acts on spec.rollout.onFailure:
// version 1. It is asked only of a step admitted with either, which no run
// begun before it has: their histories replay without it.
const analysisChange = "rollout-analysis"

// measureTimeout bounds one attempt of MeasureRollout: its queries run side
// by side, each within its 10 s timeout, then one status write. It is also
// how long a worker killed mid-round delays the analysis.
const measureTimeout = 20 * time.Second

// stepAnalysis is a step's analysis in one run: what it measures, its
// tally, and the measurement that failed it, if one did.
type stepAnalysis struct {
	step     int32
	spec     *v1alpha1.RolloutAnalysis
	input    activities.MeasureInput
	interval time.Duration
	tally    *rollout.Tally
	failed   *rollout.Measurement
	stop     workflow.CancelFunc
}

// failedNow reports whether the analysis failed its step: the step's waits
// wake on it.
func (a *stepAnalysis) failedNow() bool { return a != nil && a.failed != nil }

// startAnalysis begins step n's analysis: a round at once, then one every
// interval, in a coroutine of its own, until the step ends (stopAnalysis)
// or a round fails it. A step admitted with neither analysis nor
// onFailure, or one in a run begun before analysisChange, measures nothing
// and halts on failure as it always did.
func (r *plannedRollout) startAnalysis(ctx workflow.Context, n int32, adm activities.Admitted) {
	r.an, r.rollBack = nil, false
	if adm.Analysis == nil && adm.OnFailure != v1alpha1.RolloutOnFailureRollBack {
		return
	}
	if workflow.GetVersion(ctx, analysisChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	r.rollBack = adm.OnFailure == v1alpha1.RolloutOnFailureRollBack
	if adm.Analysis == nil || adm.Full {
		return // a promote --full skips what checks the steps: the analysis too
	}
	a := &stepAnalysis{step: n, spec: adm.Analysis, interval: rollout.AnalysisInterval(adm.Analysis),
		tally: rollout.NewTally(adm.Analysis.FailureLimit),
		input: activities.MeasureInput{Config: r.config, UID: r.uid, Class: adm.Class, Step: n, Pools: adm.Pools, Metrics: adm.Analysis.Metrics}}
	actx, stop := workflow.WithCancel(ctx)
	a.stop = stop
	r.an = a
	workflow.Go(actx, func(ctx workflow.Context) {
		for a.failed == nil {
			if err := r.measure(ctx, a); err != nil {
				return // cancelled: the step ended
			}
			if a.failed != nil || workflow.Sleep(ctx, a.interval) != nil {
				return
			}
		}
	})
}

// stopAnalysis ends the step's periodic rounds (a round under way is
// cancelled).
func (r *plannedRollout) stopAnalysis() {
	if r.an != nil && r.an.stop != nil {
		r.an.stop()
	}
}

// measure takes one round of the analysis at the workflow's time and
// tallies it; the round is in the history as the activity's result.
func (r *plannedRollout) measure(ctx workflow.Context, a *stepAnalysis) error {
	in := a.input
	in.At, in.Failures = workflow.Now(ctx), maps.Clone(a.tally.Failures)
	mctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: measureTimeout, RetryPolicy: retryForever})
	var round []rollout.Measurement
	if err := workflow.ExecuteActivity(mctx, act.MeasureRollout, in).Get(ctx, &round); err != nil {
		return err
	}
	if f := a.tally.Add(round); f != nil && a.failed == nil {
		a.failed = f
	}
	return nil
}

// analysisFailure is why a failed analysis fails step n: the measurement
// (the metric and its value) and the count against the limit.
func (a *stepAnalysis) failure() string {
	f := a.failed
	return fmt.Sprintf("step %d: analysis failed: %s (%d measurements out of bounds, more than its failureLimit %d)",
		a.step, f.Message, a.tally.Failures[f.Metric], a.spec.FailureLimit)
}

// concludeAnalysis is the analysis' word once the step's pools moved,
// its gate passed and its bake ended: a last round measures the step as it
// ends; the step concludes once no metric's last measurement is
// inconclusive. While one is, the step holds, measuring every interval,
// for at most the step deadline; then it fails. concluded is false when
// the step failed, or a look ended it.
func (r *plannedRollout) concludeAnalysis(ctx workflow.Context, n int32, deadline time.Duration) (concluded bool, err error) {
	a := r.an
	if a == nil {
		return true, nil
	}
	a.stop()
	a.stop = nil
	end := workflow.Now(ctx).Add(deadline)
	said := ""
	for {
		if a.failed == nil {
			if err := r.measure(ctx, a); err != nil {
				return false, err
			}
		}
		if a.failed != nil {
			return false, r.fail(ctx, n, "", a.failure())
		}
		why := a.tally.Inconclusive(a.spec.Metrics)
		if why == "" {
			return true, nil
		}
		if !workflow.Now(ctx).Before(end) {
			return false, r.fail(ctx, n, "", fmt.Sprintf("step %d: its analysis stayed inconclusive for %s (the step deadline): %s", n, deadline, why))
		}
		if why != said {
			said = why
			msg := fmt.Sprintf("step %d: holding: its analysis is inconclusive: %s; measuring again every %s until %s, then the step fails",
				n, why, a.interval, end.UTC().Format(time.RFC3339))
			if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutProgressing, Message: msg}); err != nil {
				return false, err
			}
		}
		goOn, err := r.sleepStep(ctx, n, a.interval)
		if err != nil || !goOn {
			return false, err
		}
	}
}

// sleepStep waits d in step n, looking at every signal meanwhile: goOn is
// false when a look ended the step.
func (r *plannedRollout) sleepStep(ctx workflow.Context, n int32, d time.Duration) (goOn bool, err error) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, d)
	for !timer.IsReady() {
		if err := workflow.Await(ctx, func() bool { return timer.IsReady() || r.woken() }); err != nil {
			return false, err
		}
		if timer.IsReady() {
			break
		}
		v, _, err := r.look(ctx)
		if err != nil || !goesOn(v, n) {
			return false, err
		}
	}
	return true, timer.Get(ctx, nil)
}

// woken reports whether something calls the run to look: a recheck, an
// operator's signal, or the step's analysis failing it.
func (r *plannedRollout) woken() bool {
	return r.recheck || r.pauseSignal || r.resumeSignal || r.an.failedNow()
}

// fail ends step n on a failure (its analysis, its gate, a failing switch,
// its deadline) as spec.rollout.onFailure says: a halt, or a rollback.
func (r *plannedRollout) fail(ctx workflow.Context, n int32, pool, why string) error {
	if r.rollBack {
		return r.rollBackStep(ctx, n, why)
	}
	return r.halt(ctx, n, pool, why)
}

// rollBackStep moves every pool the rollout admitted back to the config it
// came from: it records the failure as an abort of the rollout's own
// (status.rollout.abort, rolledBack), which admits no pool, so the starter
// sends each admitted pool back as it would on an abort. The rollout then
// holds RolledBack until a retry or a new spec.
func (r *plannedRollout) rollBackStep(ctx workflow.Context, n int32, why string) error {
	r.halts++
	r.held = v1alpha1.RolloutRolledBack
	r.stopAnalysis()
	workflow.GetLogger(ctx).Warn("rollout rolled back", "config", r.config, "step", n, "why", why)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"sandbox_config": r.config, metricsClusterLabel: string(clusterOf(ctx))}).
		Counter("ate_rollout_rollbacks").Inc(1)
	msg := fmt.Sprintf("%s; rolled back: every pool it admitted goes back to the config it came from; take the step again with `kubectl ate rollout retry %s` (a new value of the annotation %s) or a change of the config's spec",
		why, r.config, v1alpha1.RolloutRetryAnnotation)
	if err := workflow.ExecuteActivity(ctx, act.RecordRolloutEvent, activities.RolloutEventInput{
		Config: r.config, UID: string(r.uid), Key: fmt.Sprintf("%s/rollback/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, r.halts),
		Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonRolloutRolledBack,
		Note: fmt.Sprintf("rollout of SandboxConfig %s rolled back at step %d: %s", r.config, n, msg),
	}).Get(ctx, nil); err != nil {
		return err
	}
	return r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutRolledBack, Message: msg,
		Abort: &v1alpha1.RolloutHalt{Step: n, Message: msg, RolledBack: true, Generation: r.generation}})
}
