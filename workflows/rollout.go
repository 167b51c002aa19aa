package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// plannerChange is the GetVersion change ID of the rollout that asks the
// planner (rollout.Decide) at every look: version 1. Runs begun by v0.1.0
// have no marker and go on as rolloutV1.
const plannerChange = "rollout-planner"

// driveChange is the GetVersion change ID of the rollout that records an
// event on the config for every change a person would want to hear of
// (a step completed, paused, resumed, promoted, aborted, completed):
// version 1. Runs begun before it record only halts.
const driveChange = "rollout-drive"

// Rollout is the staged rollout of a class default (SandboxConfigRollout):
// one execution per rolling-out config, ID wfapi.RolloutWorkflowID, started
// by the starter when a config with spec.rollout becomes the newest default
// of its class. It is an executor: at each look the planner
// (internal/rollout.Decide, reading the config, its status and its class's
// pools) says what to do, and the run does it:
//
//   - Take a step: AdmitRolloutStep writes the admission (the starter, whose
//     resolution reads it, starts the admitted pools' switches);
//     WaitRolloutStep waits until they are on the config and Available (a
//     failing switch or the step's deadline halts); the gate workflow of
//     spec.rollout.gate runs as a child, bounded by its timeout (its
//     failure halts); the bake timer runs.
//   - Hold, Paused or Halted, until a look says otherwise.
//   - Complete, End (Stopped, Superseded), or StartOver (the config was
//     created again under its name: continue as new, bound to it).
//
// Everything that must outlive a run (the admission, the step's start, a
// halt, a pause signal, the last resume request answered) is in
// status.rollout, so any new run decides as the last one would have.
// `recheck` (the starter sends it on every change of the config or its
// class's defaults) makes it look at once, also while a step's pools move,
// its gate runs or it bakes; `pause` and `resume` from the CLI (no
// generation) are recorded in status.
func Rollout(ctx workflow.Context, in wfapi.RolloutInput) (*wfapi.RolloutResult, error) {
	info := workflow.GetInfo(ctx)
	if err := wfapi.CheckRolloutID(info.WorkflowExecution.ID, in.Config); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrInvalidInput, nil)
	}
	recordCluster(ctx, clusterOf(ctx))
	ctx = withActivities(ctx)
	if workflow.GetVersion(ctx, plannerChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return rolloutV1(ctx, in, info.WorkflowExecution.ID)
	}
	r := &plannedRollout{config: in.Config, id: info.WorkflowExecution.ID, done: -1,
		drive:  workflow.GetVersion(ctx, driveChange, workflow.DefaultVersion, 1) == 1,
		counts: workflow.GetVersion(ctx, countsChange, workflow.DefaultVersion, 1) == 1}
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryPlan, func() (wfapi.RolloutPlan, error) {
		return r.queryPlan(), nil
	}); err != nil {
		return nil, err
	}
	r.listen(ctx)
	return r.run(ctx, in)
}

// plannedRollout is one run's state: what it is bound to and has done, and
// what its signals asked for since its last look.
type plannedRollout struct {
	config, id string
	uid        types.UID
	done       int32
	// generation is the spec generation the last look read; written the
	// one status.rollout.observedGeneration has from this run.
	generation, written int64
	// recheck asks for a look; pauseSignal and resumeSignal are an
	// operator's signals not yet recorded in status.
	recheck, pauseSignal, resumeSignal bool
	// gates counts the gate runs started, for their workflow IDs; halts
	// and events the events recorded, for their keys.
	gates, halts, events int
	// drive: the run records an event for each change (driveChange).
	drive bool
	// counts: the run keeps its counts current while it waits on other
	// than its pools (countsChange).
	counts bool
	// looks counts the run's looks: its first takes what status says as
	// where the rollout was held.
	looks   int
	verdict rollout.Verdict
	// held is the hold the last look decided (Paused or Halted), "" for none.
	held      v1alpha1.RolloutPhase
	plan      wfapi.RolloutPlan
	doneSteps []wfapi.RolloutPlanStep
	// an is the analysis of the step under way (nil: none); rollBack is
	// true when the step's failure rolls it back (spec.rollout.onFailure).
	an       *stepAnalysis
	rollBack bool
}

// listen takes the signals in a coroutine of their own, so that they are
// heard whatever the main coroutine waits on. A payload that is not a
// RolloutSignal is logged and taken as a recheck: it never fails the task.
func (r *plannedRollout) listen(ctx workflow.Context) {
	log := workflow.GetLogger(ctx)
	channels := map[string]workflow.ReceiveChannel{}
	for _, name := range []string{wfapi.SignalPause, wfapi.SignalResume, wfapi.SignalRecheck} {
		channels[name] = workflow.GetSignalChannel(ctx, name)
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			s := workflow.NewSelector(ctx)
			for _, name := range []string{wfapi.SignalPause, wfapi.SignalResume, wfapi.SignalRecheck} {
				s.AddReceive(channels[name], func(c workflow.ReceiveChannel, _ bool) {
					var raw converter.RawValue
					c.Receive(ctx, &raw)
					sig, err := parseRolloutSignal(raw)
					if err != nil {
						log.Warn("ignoring a malformed rollout signal's payload", "config", r.config, "signal", name, "error", err)
					}
					r.recheck = true
					// The starter's signals carry the generation they
					// follow: a look reads spec.rollout.paused itself.
					if sig.Generation == 0 && err == nil {
						r.pauseSignal = r.pauseSignal || name == wfapi.SignalPause
						r.resumeSignal = r.resumeSignal || name == wfapi.SignalResume
						if name == wfapi.SignalResume {
							r.pauseSignal = false
						}
					}
				})
			}
			s.Select(ctx)
		}
	})
}

func parseRolloutSignal(raw converter.RawValue) (wfapi.RolloutSignal, error) {
	var sig wfapi.RolloutSignal
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 || string(p.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingNil {
		return sig, nil
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return sig, fmt.Errorf("the payload's encoding is %q, not JSON", enc)
	}
	// Decoding JSON into a fixed struct is deterministic.
	err := json.Unmarshal(p.GetData(), &sig) //workflowcheck:ignore
	return sig, err
}

func (r *plannedRollout) run(ctx workflow.Context, in wfapi.RolloutInput) (*wfapi.RolloutResult, error) {
	log := workflow.GetLogger(ctx)
	for {
		v, look, err := r.look(ctx)
		if err != nil {
			return nil, err
		}
		switch v.Action {
		case rollout.StartOver:
			log.Info("rollout starting over", "config", r.config, "why", v.Message)
			return nil, workflow.NewContinueAsNewError(ctx, wfapi.RolloutWorkflow, in)
		case rollout.End:
			if v.Write {
				if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v.Phase, Message: v.Message,
					Clear: v.Phase == v1alpha1.RolloutStopped}); err != nil {
					return nil, err
				}
			}
			log.Info("rollout ended", "config", r.config, "phase", v.Phase, "why", v.Message)
			return &wfapi.RolloutResult{Phase: string(v.Phase), Message: v.Message}, nil
		case rollout.Complete:
			if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v.Phase, Message: v.Message}); err != nil {
				return nil, err
			}
			if r.drive {
				if err := r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutCompleted,
					fmt.Sprintf("rollout of SandboxConfig %s completed: %s; every unpinned pool of its class follows it", r.config, v.Message)); err != nil {
					return nil, err
				}
			}
			log.Info("rollout completed", "config", r.config)
			return &wfapi.RolloutResult{Phase: string(v.Phase), Message: v.Message}, nil
		case rollout.Hold:
			if v.Phase == v1alpha1.RolloutAwaitingClusters {
				// spec.rollout.after: step 1 waits for other clusters (rollout_after.go).
				if err := r.awaitClusters(ctx, v, look); err != nil {
					return nil, err
				}
				continue
			}
			if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v.Phase, Message: v.Message, PausedSeen: v.PausedSeen}); err != nil {
				return nil, err
			}
			stop := r.keepCounts(ctx)
			err := workflow.Await(ctx, func() bool { return r.recheck })
			stop()
			if err != nil {
				return nil, err
			}
		case rollout.Take:
			if err := r.step(ctx, v.Step, look); err != nil {
				return nil, err
			}
		}
	}
}

// look records an operator's signals, then reads the config and its pools
// and takes the planner's verdict; it binds the run to the config's
// incarnation on its first look.
func (r *plannedRollout) look(ctx workflow.Context) (rollout.Verdict, *activities.RolloutLook, error) {
	r.recheck = false
	if r.pauseSignal || r.resumeSignal {
		paused := r.pauseSignal
		in := activities.RolloutStatusInput{SignalPaused: &paused, ClearHalt: r.resumeSignal}
		if r.resumeSignal {
			// As v0.1.0's: an operator's resume also lifts spec.rollout.paused,
			// until the spec changes.
			in.SignalResumed = r.generation
		}
		r.pauseSignal, r.resumeSignal = false, false
		if err := r.setStatus(ctx, in); err != nil {
			return rollout.Verdict{}, nil, err
		}
	}
	var look activities.RolloutLook
	if err := workflow.ExecuteActivity(ctx, act.LookAtRollout, activities.LookInput{Config: r.config, UID: r.uid, Done: r.done}).Get(ctx, &look); err != nil {
		return rollout.Verdict{}, nil, err
	}
	v := look.Verdict
	if v.Action != rollout.StartOver {
		r.done, r.generation = v.Done, look.Generation
		if r.uid == "" {
			r.uid = v.UID
		}
	}
	r.verdict = v
	was := r.held
	if r.looks++; r.looks == 1 {
		was = heldIn(look.Status.Phase)
	}
	r.held = ""
	if v.Action == rollout.Hold {
		r.held = v.Phase // also mid-step, where the status still says Progressing
	}
	if look.Exists && look.Stop == "" {
		r.plan = look.Plan
	}
	// A resume answered, or a spec generation not written yet, is
	// recorded at once: the starter stops asking, and a new run does not
	// answer the same request again.
	if v.Action != rollout.StartOver && v.Action != rollout.End && (v.Records() || r.generation > r.written) {
		in := activities.RolloutStatusInput{Resume: v.Resume, ClearHalt: v.ClearHalt, Answered: v.Answered,
			Abort: v.Abort, ClearAbort: v.ClearAbort, PromotedStep: v.PromotedStep, PromotedFull: v.Answered.PromoteFull != ""}
		if v.Resume != "" || v.Answered.Pause != "" {
			// A resume request lifts a pause signal too; a pause request
			// made after it holds again.
			in.SignalPaused = &v.SignalPaused
		}
		if err := r.setStatus(ctx, in); err != nil {
			return rollout.Verdict{}, nil, err
		}
	}
	if r.drive && v.Action != rollout.StartOver && v.Action != rollout.End {
		if err := r.announce(ctx, v, was); err != nil {
			return rollout.Verdict{}, nil, err
		}
	}
	return v, &look, nil
}

// heldIn is the hold a status phase records: Paused, Halted or Aborted,
// "" for none.
func heldIn(p v1alpha1.RolloutPhase) v1alpha1.RolloutPhase {
	switch p {
	case v1alpha1.RolloutPaused, v1alpha1.RolloutHalted, v1alpha1.RolloutAborted, v1alpha1.RolloutRolledBack:
		return p
	}
	return ""
}

// announce records the events a look's verdict calls for, against the
// hold the rollout was in before it (was): an abort, a pause, a resume, a
// promote. Each is recorded once: its key is the run's and the event's
// count in it, the same when the activity is retried or the run replayed.
func (r *plannedRollout) announce(ctx workflow.Context, v rollout.Verdict, was v1alpha1.RolloutPhase) error {
	switch {
	case v.Abort != nil:
		if err := r.event(ctx, corev1.EventTypeWarning, v1alpha1.EventReasonRolloutAborted,
			fmt.Sprintf("rollout of SandboxConfig %s %s", r.config, v.Abort.Message)); err != nil {
			return err
		}
	case r.held == v1alpha1.RolloutPaused && was != v1alpha1.RolloutPaused:
		if err := r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutPaused,
			fmt.Sprintf("rollout of SandboxConfig %s %s", r.config, v.Message)); err != nil {
			return err
		}
	case r.held == "" && was != "" && v.Action == rollout.Take:
		if err := r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutResumed,
			fmt.Sprintf("rollout of SandboxConfig %s resumed (it was %s): taking step %d", r.config, was, v.Step)); err != nil {
			return err
		}
	}
	if v.Answered.Promote != "" {
		if err := r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutPromoted,
			fmt.Sprintf("rollout of SandboxConfig %s promoted at step %d: its approval and bake are not waited for", r.config, v.PromotedStep)); err != nil {
			return err
		}
	}
	if v.Answered.PromoteFull != "" {
		return r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutPromoted,
			fmt.Sprintf("rollout of SandboxConfig %s promoted fully: every remaining step, approval and bake skipped; every pool of its class is admitted", r.config))
	}
	return nil
}

// event records an event regarding the config, once: its key is the run's
// and the event's count in it.
func (r *plannedRollout) event(ctx workflow.Context, eventType, reason, note string) error {
	r.events++
	return workflow.ExecuteActivity(ctx, act.RecordRolloutEvent, activities.RolloutEventInput{
		Config: r.config, UID: string(r.uid), Key: fmt.Sprintf("%s/event/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, r.events),
		Type: eventType, Reason: reason, Note: note,
	}).Get(ctx, nil)
}

// goesOn reports whether a verdict taken in the middle of step n lets it go
// on: a pause holds the next step, not this one (except its gate).
func goesOn(v rollout.Verdict, n int32) bool {
	return v.Action == rollout.Take && v.Step == n || v.Action == rollout.Hold && v.Phase == v1alpha1.RolloutPaused
}

// step takes step n: admit, wait, gate, bake. A step that halts or is
// interrupted returns with r.done unchanged: it is taken again.
func (r *plannedRollout) step(ctx workflow.Context, n int32, look *activities.RolloutLook) error {
	log := workflow.GetLogger(ctx)
	var adm activities.Admitted
	if err := workflow.ExecuteActivity(ctx, act.AdmitRolloutStep, activities.AdmitInput{
		Config: r.config, Step: n, WorkflowID: r.id, Generation: r.generation, UID: r.uid,
	}).Get(ctx, &adm); err != nil {
		return err
	}
	if adm.Gone {
		return nil // the next look says why
	}
	r.recordStep(n, adm)
	log.Info("rollout step admitted", "config", r.config, "step", n, "pools", len(adm.Pools), "admitted", adm.Admitted, "total", adm.Total)
	if adm.Refused != "" {
		// A gate the rollout may not run is a mistake in the spec, not a
		// failed check: it halts whatever onFailure says.
		return r.halt(ctx, n, "", fmt.Sprintf("step %d: %s", n, adm.Refused))
	}
	r.startAnalysis(ctx, n, adm)
	defer r.stopAnalysis()

	ready, err := r.waitStep(ctx, n, adm, look.Deadline)
	if err != nil || !ready {
		return err
	}
	if adm.Gate != nil && r.verdict.Action != rollout.Take {
		// Paused while the step's pools moved: the gate waits for the
		// resume, and runs then, when the step is taken again.
		return nil
	}
	// A promote --full skips what checks the steps it skips: the gate,
	// the approval, the bake.
	if adm.Gate != nil && !adm.Full {
		passed, err := r.gate(ctx, n, adm)
		if err != nil || !passed {
			return err
		}
	}
	if adm.Approval && !adm.Full && !r.promoted(n) {
		approved, err := r.awaitApproval(ctx, n)
		if err != nil || !approved {
			return err
		}
	}
	if adm.Pause > 0 && !adm.Full && !r.promoted(n) {
		baked, err := r.bake(ctx, n, adm.Pause)
		if err != nil || !baked {
			return err
		}
	}
	if concluded, err := r.concludeAnalysis(ctx, n, look.Deadline); err != nil || !concluded {
		return err
	}
	r.done = n
	if r.drive {
		return r.event(ctx, corev1.EventTypeNormal, v1alpha1.EventReasonRolloutStepCompleted,
			fmt.Sprintf("rollout of SandboxConfig %s: step %d completed: %d of %d pools admitted, moved and Available", r.config, n, adm.Admitted, adm.Total))
	}
	return nil
}

// promoted reports whether the last look says step n was promoted: its
// approval and bake are not waited for.
func (r *plannedRollout) promoted(n int32) bool {
	return r.verdict.Promoted >= n || r.verdict.Full
}

// awaitApproval holds step n, its pools moved and its gate passed, until a
// promote lets it go; approved is false when a look ended the step.
func (r *plannedRollout) awaitApproval(ctx workflow.Context, n int32) (approved bool, err error) {
	msg := fmt.Sprintf("step %d: its pools moved and are Available; waiting for approval: `kubectl ate rollout promote %s` (a new value of the annotation %s)",
		n, r.config, v1alpha1.RolloutPromoteAnnotation)
	if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutAwaitingApproval, Message: msg}); err != nil {
		return false, err
	}
	defer r.keepCounts(ctx)()
	for {
		if err := workflow.Await(ctx, r.woken); err != nil {
			return false, err
		}
		if r.an.failedNow() {
			return false, r.fail(ctx, n, "", r.an.failure())
		}
		v, _, err := r.look(ctx)
		if err != nil || !goesOn(v, n) {
			return false, err
		}
		if r.promoted(n) {
			return true, nil
		}
	}
}

// waitStep waits for the step's pools; ready is false when the step halted
// or a look ended it.
func (r *plannedRollout) waitStep(ctx workflow.Context, n int32, adm activities.Admitted, deadline time.Duration) (ready bool, err error) {
	waitCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: rolloutWaitTimeout, HeartbeatTimeout: activityTimeout, RetryPolicy: retryForever,
	}))
	defer cancel()
	now := workflow.Now(ctx)
	waiting := workflow.ExecuteActivity(waitCtx, act.WaitRolloutStep, activities.WaitInput{
		Config: r.config, UID: r.uid, Step: n, Deadline: now.Add(deadline), Since: now,
	})
	for !waiting.IsReady() {
		if err := workflow.Await(ctx, func() bool { return waiting.IsReady() || r.woken() }); err != nil {
			return false, err
		}
		if r.an.failedNow() {
			return false, r.fail(ctx, n, "", r.an.failure())
		}
		if waiting.IsReady() {
			break
		}
		v, _, err := r.look(ctx)
		if err != nil {
			return false, err
		}
		if !goesOn(v, n) {
			return false, nil // the caller's next look acts on it
		}
		if v.Action == rollout.Hold {
			msg := fmt.Sprintf("step %d: %d of %d pools admitted; waiting for them to move and be Available; %s", n, adm.Admitted, adm.Total, v.Message)
			if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutProgressing, Message: msg}); err != nil {
				return false, err
			}
		}
	}
	var wait activities.StepWait
	if err := waiting.Get(ctx, &wait); err != nil {
		return false, err
	}
	switch wait.Outcome {
	case activities.StepReady:
		return true, nil
	case activities.StepHalted:
		return false, r.fail(ctx, n, wait.Pool, wait.Message)
	}
	return false, nil // StepLookAgain
}

// gate runs the step's gate workflow on the user's task queue, bounded by
// its timeout. A look meanwhile (a recheck or a signal) that does not let
// the step go on, a pause included, cancels it: the step is taken again,
// gate and all, once the rollout goes on.
func (r *plannedRollout) gate(ctx workflow.Context, n int32, adm activities.Admitted) (passed bool, err error) {
	g := adm.Gate
	if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutProgressing, Message: fmt.Sprintf(
		"step %d: its pools moved and are Available; gate workflow %s running on task queue %s (timeout %s)", n, g.WorkflowType, g.TaskQueue, adm.GateTimeout)}); err != nil {
		return false, err
	}
	r.gates++
	gctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	gctx = workflow.WithChildOptions(gctx, workflow.ChildWorkflowOptions{
		WorkflowID:               fmt.Sprintf("%s/gate/%d-%d", r.id, n, r.gates),
		TaskQueue:                g.TaskQueue,
		WorkflowExecutionTimeout: adm.GateTimeout,
		// The gate's failure halts the rollout; retrying it is the
		// user's resume.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	in := wfapi.GateInput{Config: r.config, Step: n, Pools: adm.Pools}
	if g.Input != nil {
		in.Input = g.Input.Raw
	}
	child := workflow.ExecuteChildWorkflow(gctx, g.WorkflowType, in)
	// The timeout is the run's own timer as well as the child's execution
	// timeout: it holds whatever the server does with a child nobody polls.
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timeout := workflow.NewTimer(timerCtx, adm.GateTimeout)
	timedOut := func() error {
		return r.fail(ctx, n, "", fmt.Sprintf("step %d: gate workflow %s on task queue %s did not finish within %s (spec.rollout.gate.timeout); is a worker polling %s?",
			n, g.WorkflowType, g.TaskQueue, adm.GateTimeout, g.TaskQueue))
	}
	for !child.IsReady() {
		if err := workflow.Await(ctx, func() bool {
			return child.IsReady() || timeout.IsReady() || r.woken()
		}); err != nil {
			return false, err
		}
		switch {
		case r.an.failedNow():
			cancel()
			return false, r.fail(ctx, n, "", r.an.failure())
		case child.IsReady():
		case timeout.IsReady():
			cancel()
			return false, timedOut()
		default:
			v, _, err := r.look(ctx)
			if err != nil {
				return false, err
			}
			if v.Action != rollout.Take || v.Step != n {
				workflow.GetLogger(ctx).Info("rollout gate cancelled", "config", r.config, "step", n, "verdict", v.Action, "why", v.Message)
				return false, nil
			}
		}
	}
	switch err := child.Get(ctx, nil); {
	case err == nil:
		return true, nil
	case temporal.IsTimeoutError(err):
		return false, timedOut()
	default:
		return false, r.fail(ctx, n, "", fmt.Sprintf("step %d: gate workflow %s failed: %v", n, g.WorkflowType, err))
	}
}

// bake runs a step's bake timer. A look meanwhile that ends the rollout or
// starts it over ends the bake; a pause holds the next step, not the timer.
func (r *plannedRollout) bake(ctx workflow.Context, n int32, pause time.Duration) (baked bool, err error) {
	end := workflow.Now(ctx).Add(pause)
	msg := fmt.Sprintf("step %d done; baking until %s", n, end.UTC().Format(time.RFC3339))
	if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutBaking, Message: msg}); err != nil {
		return false, err
	}
	defer r.keepCounts(ctx)()
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, pause)
	for !timer.IsReady() {
		if err := workflow.Await(ctx, func() bool { return timer.IsReady() || r.woken() }); err != nil {
			return false, err
		}
		if r.an.failedNow() {
			return false, r.fail(ctx, n, "", r.an.failure())
		}
		if timer.IsReady() {
			break
		}
		v, _, err := r.look(ctx)
		if err != nil {
			return false, err
		}
		if !goesOn(v, n) {
			return false, nil
		}
		if r.promoted(n) {
			return true, nil // the deferred cancel ends the timer
		}
	}
	return true, timer.Get(ctx, nil)
}

// halt stops the rollout where it is, with a Warning on the config naming
// the pool and why; status.rollout.halt keeps it until a resume.
func (r *plannedRollout) halt(ctx workflow.Context, n int32, pool, why string) error {
	r.halts++
	r.held = v1alpha1.RolloutHalted
	workflow.GetLogger(ctx).Warn("rollout halted", "config", r.config, "step", n, "pool", pool, "why", why)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"sandbox_config": r.config, metricsClusterLabel: string(clusterOf(ctx))}).
		Counter("ate_rollout_halts").Inc(1) // its phase gauge is the starter's (ate_rollout_phase)
	if err := workflow.ExecuteActivity(ctx, act.RecordRolloutEvent, activities.RolloutEventInput{
		Config: r.config, UID: string(r.uid), Key: fmt.Sprintf("%s/halt/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, r.halts),
		Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonRolloutHalted,
		Note: fmt.Sprintf("rollout of SandboxConfig %s halted at step %d: %s; resume it with a new value of the annotation %s (or signal %s)",
			r.config, n, why, v1alpha1.RolloutResumeAnnotation, wfapi.SignalResume),
	}).Get(ctx, nil); err != nil {
		return err
	}
	return r.setStatus(ctx, activities.RolloutStatusInput{Phase: v1alpha1.RolloutHalted, Message: why,
		Halt: &v1alpha1.RolloutHalt{Step: n, Message: why}})
}

// setStatus writes status.rollout on the run's incarnation, with the
// generation the last look took in.
func (r *plannedRollout) setStatus(ctx workflow.Context, in activities.RolloutStatusInput) error {
	in.Config, in.WorkflowID, in.ObservedGeneration, in.UID = r.config, r.id, r.generation, r.uid
	r.written = r.generation
	if in.Phase != "" {
		r.verdict.Phase, r.verdict.Message = in.Phase, in.Message
	}
	return workflow.ExecuteActivity(ctx, act.SetRolloutStatus, in).Get(ctx, nil)
}

// recordStep keeps the pools step n admitted for the plan query: all of
// them, also when the step is taken again.
func (r *plannedRollout) recordStep(n int32, adm activities.Admitted) {
	s := wfapi.RolloutPlanStep{Step: n, Want: adm.Want, Pools: append([]string{}, adm.Pools...)}
	for i := range r.doneSteps {
		if r.doneSteps[i].Step == n {
			r.doneSteps[i] = s
			return
		}
	}
	r.doneSteps = append(r.doneSteps, s)
}

// queryPlan answers `plan`: the steps taken with the pools each admitted,
// the steps to come as the last look saw the pools, and which have moved.
func (r *plannedRollout) queryPlan() wfapi.RolloutPlan {
	p := r.plan
	p.Config, p.Phase, p.Message = r.config, string(r.verdict.Phase), r.verdict.Message
	p.Paused, p.Halted = r.held == v1alpha1.RolloutPaused, r.held == v1alpha1.RolloutHalted
	if len(r.doneSteps) > 0 {
		p.Step = r.doneSteps[len(r.doneSteps)-1].Step
	}
	p.Done = r.doneSteps
	var next []wfapi.RolloutPlanStep
	for _, s := range r.plan.Steps {
		if s.Step > p.Step {
			next = append(next, s)
		}
	}
	p.Steps = next
	return p
}
