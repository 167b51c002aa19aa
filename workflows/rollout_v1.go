package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// rolloutWaitTimeout bounds one attempt of WaitRolloutStep, which runs for
// as long as a step's pools take (up to the step's deadline) and heartbeats
// each look: the heartbeat timeout is what finds a dead worker.
const rolloutWaitTimeout = 24 * time.Hour

// rolloutV1 is the staged rollout as v0.1.0 ran it, kept unchanged for
// the runs that began under it (their histories replay through it; the
// replay fixtures *.v1.json hold some). New runs take the planner's
// (rollout.go); this code is removed once no v0.1.0 run can be open.
func rolloutV1(ctx workflow.Context, in wfapi.RolloutInput, id string) (*wfapi.RolloutResult, error) {
	r := &rolloutRun{config: in.Config, id: id}
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryPlan, func() (wfapi.RolloutPlan, error) {
		return r.queryPlan(), nil
	}); err != nil {
		return nil, err
	}
	r.listen(ctx)
	return r.run(ctx)
}

// rolloutRun is one rollout's state. Signals change it from their own
// coroutine; the main one waits on it with workflow.Await.
type rolloutRun struct {
	config, id string
	// done is the last step whose pools moved, passed the gate and baked;
	// through the last pool admitted so far.
	done    int32
	through *rollout.PoolKey
	// paused holds the rollout; specPaused is spec.rollout.paused as the
	// starter last signalled it (or the first look read it), generation
	// the config generation it came with.
	paused, specPaused bool
	generation         int64
	// halted is set by a failed step, cleared by resume.
	halted bool
	// recheck asks for a look at once; dirty for a status write (a signal
	// changed what status.rollout should say).
	recheck, dirty bool
	halts          int
	phase          v1alpha1.RolloutPhase
	message        string
	plan           wfapi.RolloutPlan
	doneSteps      []wfapi.RolloutPlanStep
}

// listen takes the signals in a coroutine of their own, so that they
// change the state whatever the main coroutine waits on.
func (r *rolloutRun) listen(ctx workflow.Context) {
	pause := workflow.GetSignalChannel(ctx, wfapi.SignalPause)
	resume := workflow.GetSignalChannel(ctx, wfapi.SignalResume)
	recheck := workflow.GetSignalChannel(ctx, wfapi.SignalRecheck)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var sig wfapi.RolloutSignal
			s := workflow.NewSelector(ctx)
			s.AddReceive(pause, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, &sig)
				r.signalled(ctx, true, sig)
			})
			s.AddReceive(resume, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, &sig)
				r.signalled(ctx, false, sig)
			})
			s.AddReceive(recheck, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				r.recheck = true
			})
			s.Select(ctx)
		}
	})
}

// signalled applies a pause (pause true) or a resume. The starter's carry
// the config generation: one not newer than what the rollout has taken in
// is stale, and one that does not change spec.rollout.paused (another spec
// edit) changes nothing, so a halted rollout stays halted until paused is
// toggled. An operator's (no generation) always acts, until the next
// change of spec.rollout.paused.
func (r *rolloutRun) signalled(ctx workflow.Context, pause bool, sig wfapi.RolloutSignal) {
	if r.apply(pause, sig.Generation) {
		workflow.GetLogger(ctx).Info("rollout signalled", "config", r.config, "pause", pause, "generation", sig.Generation)
	}
}

// apply is signalled's rule; it reports whether the signal paused or
// resumed the rollout.
func (r *rolloutRun) apply(pause bool, generation int64) bool {
	if generation != 0 {
		if generation <= r.generation {
			return false
		}
		r.generation, r.dirty = generation, true
		if pause == r.specPaused {
			return false
		}
		r.specPaused = pause
	}
	r.paused, r.dirty = pause, true
	if !pause {
		r.halted = false
	}
	return true
}

func (r *rolloutRun) run(ctx workflow.Context) (*wfapi.RolloutResult, error) {
	log := workflow.GetLogger(ctx)
	first := true
	for {
		r.recheck = false
		look, err := r.look(ctx)
		if err != nil {
			return nil, err
		}
		if first {
			// A new run goes on where status says the rollout stands: the
			// pools admitted stay admitted, and its step is taken again
			// (its admission admits nothing more, its wait ends at once
			// if its pools are there).
			first = false
			if st := look.Status; st.Step > 0 && st.Phase != v1alpha1.RolloutStopped {
				r.done, r.through = st.Step-1, rollout.KeyOfRef(st.AdmittedThrough)
				// A halt outlives its run (one terminated by hand): it
				// waits for a resume all the same.
				r.halted, r.message = st.Phase == v1alpha1.RolloutHalted, st.Message
			}
			if look.Generation > r.generation {
				r.generation, r.specPaused, r.paused = look.Generation, look.Paused, look.Paused
			}
		}
		if look.Stop != "" {
			return r.stop(ctx, look)
		}
		if r.done >= look.Steps {
			if err := r.setStatus(ctx, v1alpha1.RolloutCompleted, fmt.Sprintf("all %d steps done", look.Steps), false); err != nil {
				return nil, err
			}
			log.Info("rollout completed", "config", r.config)
			return &wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted)}, nil
		}
		if r.halted || r.paused {
			if err := r.hold(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.step(ctx, r.done+1, look); err != nil {
			return nil, err
		}
	}
}

// look reads the config and its pools, and keeps the plan for the query.
func (r *rolloutRun) look(ctx workflow.Context) (*activities.RolloutLook, error) {
	var look activities.RolloutLook
	if err := workflow.ExecuteActivity(ctx, act.LookAtRollout, activities.LookInput{Config: r.config}).Get(ctx, &look); err != nil {
		return nil, err
	}
	if look.Stop == "" {
		r.plan = look.Plan
	}
	return &look, nil
}

// stop ends the rollout as the look says: Completed or Superseded keep the
// admission (a superseded rollout's pools stay where they are until the
// newer default admits them, and it goes on if it becomes the newest
// again); Stopped drops it, so a config annotated again starts over.
func (r *rolloutRun) stop(ctx workflow.Context, look *activities.RolloutLook) (*wfapi.RolloutResult, error) {
	if look.Exists && look.Stop != v1alpha1.RolloutCompleted {
		r.message = look.StopMessage
		if err := r.setStatus(ctx, look.Stop, look.StopMessage, look.Stop == v1alpha1.RolloutStopped); err != nil {
			return nil, err
		}
	}
	r.phase = look.Stop
	workflow.GetLogger(ctx).Info("rollout ended", "config", r.config, "phase", look.Stop, "why", look.StopMessage)
	return &wfapi.RolloutResult{Phase: string(look.Stop), Message: look.StopMessage}, nil
}

// hold waits, Paused or Halted, for a resume or a reason to look again.
func (r *rolloutRun) hold(ctx workflow.Context) error {
	phase, msg := v1alpha1.RolloutPaused, "paused: no more pools move until resumed"
	if r.halted {
		phase, msg = v1alpha1.RolloutHalted, r.message
	}
	if err := r.setStatus(ctx, phase, msg, false); err != nil {
		return err
	}
	for {
		if err := workflow.Await(ctx, func() bool { return r.recheck || r.dirty || !(r.paused || r.halted) }); err != nil {
			return err
		}
		if r.recheck || !(r.paused || r.halted) {
			return nil
		}
		// A signal that changed nothing but the generation taken in.
		if err := r.setStatus(ctx, phase, msg, false); err != nil {
			return err
		}
	}
}

// step takes one step: admit, wait, gate, bake. A step that halts returns
// with r.halted set and r.done unchanged: after a resume it is taken again.
func (r *rolloutRun) step(ctx workflow.Context, n int32, look *activities.RolloutLook) error {
	log := workflow.GetLogger(ctx)
	var adm activities.Admitted
	if err := workflow.ExecuteActivity(ctx, act.AdmitRolloutStep, activities.AdmitInput{
		Config: r.config, Step: n, Prev: r.through, WorkflowID: r.id, Generation: r.generation,
	}).Get(ctx, &adm); err != nil {
		return err
	}
	if adm.Gone {
		return nil // the next look says why
	}
	r.phase, r.dirty = v1alpha1.RolloutProgressing, false
	r.recordStep(n, adm)
	r.through = adm.Through
	log.Info("rollout step admitted", "config", r.config, "step", n, "pools", len(adm.Pools), "admitted", adm.Admitted, "total", adm.Total)

	var wait activities.StepWait
	waitCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: rolloutWaitTimeout, HeartbeatTimeout: activityTimeout, RetryPolicy: retryForever,
	})
	now := workflow.Now(ctx)
	waiting := workflow.ExecuteActivity(waitCtx, act.WaitRolloutStep, activities.WaitInput{
		Config: r.config, Step: n, Deadline: now.Add(look.Deadline), Since: now,
	})
	for !waiting.IsReady() {
		// A pause or resume while the step's pools move is taken in at
		// once (status says so, and the starter stops re-sending it); it
		// acts once the step is done.
		if err := workflow.Await(ctx, func() bool { return waiting.IsReady() || r.dirty }); err != nil {
			return err
		}
		if r.dirty && !waiting.IsReady() {
			msg := fmt.Sprintf("step %d: %d of %d pools admitted; waiting for them to move and be Available", n, adm.Admitted, adm.Total)
			if r.paused {
				msg += "; paused: no further step until resumed"
			}
			if err := r.setStatus(ctx, v1alpha1.RolloutProgressing, msg, false); err != nil {
				return err
			}
		}
	}
	if err := waiting.Get(ctx, &wait); err != nil {
		return err
	}
	switch wait.Outcome {
	case activities.StepLookAgain:
		return nil
	case activities.StepHalted:
		return r.halt(ctx, n, wait.Pool, wait.Message)
	}

	if adm.Gate != nil {
		if err := r.setStatus(ctx, v1alpha1.RolloutProgressing,
			fmt.Sprintf("step %d: its pools moved and are Available; gate workflow %s running on task queue %s", n, adm.Gate.WorkflowType, adm.Gate.TaskQueue), false); err != nil {
			return err
		}
		gctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: fmt.Sprintf("%s/gate/%d-%d", r.id, n, r.halts),
			TaskQueue:  adm.Gate.TaskQueue,
			// The gate's failure halts the rollout; retrying it is the
			// user's resume.
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		if err := workflow.ExecuteChildWorkflow(gctx, adm.Gate.WorkflowType, wfapi.GateInput{
			Config: r.config, Step: n, Pools: adm.Pools,
		}).Get(ctx, nil); err != nil {
			return r.halt(ctx, n, "", fmt.Sprintf("step %d: gate workflow %s failed: %v", n, adm.Gate.WorkflowType, err))
		}
	}

	if adm.Pause > 0 {
		stopped, err := r.bake(ctx, n, adm.Pause)
		if err != nil || stopped {
			return err
		}
	}
	r.done = n
	return nil
}

// bake runs a step's bake timer. A recheck meanwhile looks at the config:
// one no longer the rollout's to run ends the bake (stopped); otherwise the
// timer goes on. A pause meanwhile holds the next step, not the timer.
func (r *rolloutRun) bake(ctx workflow.Context, n int32, pause time.Duration) (stopped bool, err error) {
	end := workflow.Now(ctx).Add(pause)
	msg := fmt.Sprintf("step %d done; baking until %s", n, end.UTC().Format(time.RFC3339))
	if err := r.setStatus(ctx, v1alpha1.RolloutBaking, msg, false); err != nil {
		return false, err
	}
	timer := workflow.NewTimer(ctx, pause)
	fired := false
	for !fired {
		if err := workflow.Await(ctx, func() bool { return timer.IsReady() || r.recheck || r.dirty }); err != nil {
			return false, err
		}
		switch {
		case timer.IsReady():
			fired = true
		case r.recheck:
			r.recheck = false
			look, err := r.look(ctx)
			if err != nil {
				return false, err
			}
			if look.Stop != "" {
				return true, nil // the caller's next look ends the rollout
			}
		default:
			if err := r.setStatus(ctx, v1alpha1.RolloutBaking, msg, false); err != nil {
				return false, err
			}
		}
	}
	return false, timer.Get(ctx, nil)
}

// halt stops the rollout where it is: Halted, with a Warning on the config
// naming the pool and why, until resumed.
func (r *rolloutRun) halt(ctx workflow.Context, n int32, pool, why string) error {
	r.halted, r.halts = true, r.halts+1
	r.message = why
	workflow.GetLogger(ctx).Warn("rollout halted", "config", r.config, "step", n, "pool", pool, "why", why)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"sandbox_config": r.config, metricsClusterLabel: string(clusterOf(ctx))}).
		Counter("ate_rollout_halts").Inc(1) // its phase gauge is the starter's (ate_rollout_phase)
	if err := workflow.ExecuteActivity(ctx, act.RecordRolloutEvent, activities.RolloutEventInput{
		Config: r.config, Key: fmt.Sprintf("%s/halt/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, r.halts),
		Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonRolloutHalted,
		Note: fmt.Sprintf("rollout of SandboxConfig %s halted at step %d: %s; resume it by setting spec.rollout.paused to true, then false (or signal %s)", r.config, n, why, wfapi.SignalResume),
	}).Get(ctx, nil); err != nil {
		return err
	}
	return nil // the loop holds it (hold)
}

// setStatus writes the phase and message (and the generation taken in).
func (r *rolloutRun) setStatus(ctx workflow.Context, phase v1alpha1.RolloutPhase, msg string, clear bool) error {
	r.phase, r.message, r.dirty = phase, msg, false
	return workflow.ExecuteActivity(ctx, act.SetRolloutStatus, activities.RolloutStatusInput{
		Config: r.config, Phase: phase, Message: msg, WorkflowID: r.id, ObservedGeneration: r.generation, Clear: clear,
	}).Get(ctx, nil)
}

func (r *rolloutRun) recordStep(n int32, adm activities.Admitted) {
	for i := range r.doneSteps {
		if r.doneSteps[i].Step == n {
			r.doneSteps[i].Pools = append(r.doneSteps[i].Pools, adm.Pools...)
			return
		}
	}
	r.doneSteps = append(r.doneSteps, wfapi.RolloutPlanStep{Step: n, Want: adm.Want, Pools: append([]string{}, adm.Pools...)})
}

// queryPlan answers `plan`: the steps taken with the pools each admitted,
// the steps to come as the last look saw the pools, and which have moved.
func (r *rolloutRun) queryPlan() wfapi.RolloutPlan {
	p := r.plan
	p.Config, p.Phase, p.Message, p.Paused, p.Halted = r.config, string(r.phase), r.message, r.paused, r.halted
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
