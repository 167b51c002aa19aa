package workflows

import (
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// Switch moves one class of one pool to another config (or clears a claim
// no switch works on), so that a config deleted at any moment is never
// recorded as in use. It is a top-level execution with the ID
// wfapi.SwitchWorkflowID, which names the pool it acts on. The starter
// starts it with the move its cache asked for; an operator's
// signal-with-start with no input makes it decide its move from a live
// read. The ID's conflict policy keeps one running per pool, so a pool's
// switches run one at a time. A move takes one workflow task:
//
//  1. Protect the target with the finalizer (refused once the config is in
//     deletion), then Claim it in pendingConfigRef, which the release
//     workflow honours: written only while the class still names From and
//     shows the run that last wrote it when the move was planned.
//  2. Confirm (configRef = target), which reads the target live once the
//     pool shows the claim, so a deletion that raced the claim is seen
//     (and Protect again, then Confirm, if it is a new config under the
//     same name), or RollBack (configRef unchanged); RecordEvent, once the
//     write has landed; WakeReleases of a config the class left in
//     deletion; and the Outcome.
//
// Every step is a local activity, so a crash runs the whole task again, and
// nothing in the history says which writes landed. The class's status does:
// each write of the switch stamps the class with its run
// (status.sandboxClasses[].lastSwitch), so the re-run's Claim finds its own
// claim standing (go on), its own confirm (the event is still due, keyed by
// the run, so recorded once) or its own roll back; a stamp of another run
// is another switch's write, and the run ends superseded with no write and
// no event (activities/lastswitch.go, docs/switch-protocol.md).
//
// A local activity is recorded in the history as one marker event instead
// of an activity's three events and the workflow task that follows them.
// What that gives up: a local activity's input is not in the history (its
// type and result are, in a marker), and a step runs inside a workflow
// task, so the worker needs enough workflow task pollers. A step still
// failing after its local retries is handed to the server as a regular
// activity (step), so a stuck switch adds no history event per retry.
func Switch(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	// The ID names the cluster and the pool: a switch acts on that pool
	// of that cluster only, whoever started it with whatever input.
	pool, err := wfapi.SwitchPool(workflow.GetInfo(ctx).WorkflowExecution.ID, in.Pool)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrInvalidInput, nil)
	}
	cluster := clusterOf(ctx) // the ID SwitchPool accepted names one
	in.Pool = pool
	if problem := in.Problem(); problem != "" {
		// A switch started by hand with what no step could carry out:
		// fail now, before any step, rather than retry a step forever
		// while holding the pool's switch ID.
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("switch of WorkerPool %s refused: %s", pool, problem), activities.ErrInvalidInput, nil)
	}
	log := workflow.GetLogger(ctx)
	state := wfapi.SwitchState{Pool: pool.String()}
	atStep(ctx, &state, "deciding")
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryState, func() (wfapi.SwitchState, error) {
		return state, nil
	}); err != nil {
		return nil, err
	}
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	// A re-resolution asked for before this run began (the signal of a
	// signal-with-start) is what a run with no input does: only one asked
	// for while it runs calls for another look. A run with a move (the
	// starter's) was planned before the signal came: it keeps it, makes
	// its move, and continues as new for the look (see finish).
	if !in.IsMove() {
		drain(reresolve)
	}
	ctx = withActivities(ctx)

	if !in.IsMove() {
		// Started by an operator (signal-with-start with no input): decide
		// on a live read, recorded by a regular activity before any write.
		// The CLI sets no search attributes: name the pool for the query
		// that lists its switches.
		// A run continued as new for a fresh look carries the previous
		// run's search attributes (the SDK copies them into the new run):
		// its move and outcome are not this run's.
		attrs := append(clusterAttribute(ctx, cluster), searchattr.WorkerPoolKey.ValueSet(pool.String()))
		attrs = append(attrs, carriedMove(ctx)...)
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			log.Warn("could not record the pool as a search attribute", "error", err)
		}
		atStep(ctx, &state, "Observe")
		var obs activities.Observation
		if err := workflow.ExecuteActivity(ctx, act.Observe, in.Pool).Get(ctx, &obs); err != nil {
			return nil, err
		}
		planned, ok := obs.NextMove(in.Pool)
		if !ok {
			res := &wfapi.SwitchResult{Outcome: wfapi.OutcomeUpToDate}
			if !obs.Exists {
				res.Outcome = wfapi.OutcomePoolGone
			}
			ended(ctx, &state, res.Outcome)
			return finish(ctx, in, res, reresolve)
		}
		in = planned
		if err := workflow.UpsertTypedSearchAttributes(ctx, wfapi.SwitchAttributes(cluster, in)...); err != nil {
			log.Warn("could not record the move as search attributes", "error", err)
		}
	} else {
		recordCluster(ctx, cluster)
	}
	state.Class, state.From, state.To, state.Abandon = string(in.Class), in.From, in.To, in.Abandon
	log.Info("switching", "pool", in.Pool.String(), "class", in.Class, "from", in.From, "to", in.To, "abandon", in.Abandon)

	res, err := move(ctx, in, &state)
	if err != nil {
		return nil, err
	}
	ended(ctx, &state, res.Outcome)
	return finish(ctx, in, res, reresolve)
}

// move runs the move, step by step, as the Switch doc describes.
func move(ctx workflow.Context, in wfapi.SwitchInput, state *wfapi.SwitchState) (*wfapi.SwitchResult, error) {
	if in.To == "" {
		atStep(ctx, state, "AbandonClaim")
		var w activities.PoolWrite
		if err := step(ctx, act.AbandonClaim, activities.ClaimInput{
			Pool: in.Pool, Class: in.Class, Config: in.Abandon,
		}).Get(ctx, &w); err != nil {
			return nil, err
		}
		if w.Outcome == activities.PoolGone {
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		}
		if err := wake(ctx, state, in.Pool, []string{in.Abandon}); err != nil {
			return nil, err
		}
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack}, nil
	}

	atStep(ctx, state, "Protect")
	check, yielding, err := protectBeforeClaim(ctx, in)
	if err != nil {
		return nil, err
	}
	var claim activities.PoolWrite
	if check.OK || yielding {
		atStep(ctx, state, "Claim")
		if err := step(ctx, act.Claim, activities.ClaimInput{
			Pool: in.Pool, Class: in.Class, Config: in.To, ResourceVersion: in.PoolResourceVersion,
			ExpectFrom: true, From: in.From,
			ExpectSpec: in.SpecConfigRef != nil, SpecConfigRef: ptr.Deref(in.SpecConfigRef, ""),
			ExpectRun: in.FromRun != nil, FromRun: ptr.Deref(in.FromRun, ""),
			OnlyOwn: yielding,
		}).Get(ctx, &claim); err != nil {
			return nil, err
		}
		if yielding {
			if claim.Outcome == activities.Unclaimed {
				// Nothing of this run on the class: the move can give way
				// to a fresh look, which plans what the pool asks for now.
				drain(workflow.GetSignalChannel(ctx, wfapi.SignalReresolve))
				workflow.GetLogger(ctx).Info("re-resolution asked before the claim; yielding", "pool", in.Pool.String(), "class", in.Class, "to", in.To)
				return nil, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, wfapi.SwitchInput{})
			}
			// An earlier run of this task claimed (its completion refused
			// for the signal, or its worker lost): its Protect succeeded,
			// and the move goes on as that run left it. The signal waits
			// for the switch's end.
			check.OK = true
		}
		switch claim.Outcome {
		case activities.Landed, activities.LandedThenGone:
			// An earlier run of this task confirmed (its markers lost with
			// a worker), maybe before the pool went: the move happened, its
			// event is due.
			res, err := switched(ctx, in, &claim)
			if err != nil || res.Outcome != wfapi.OutcomeConfirmed || !in.FromDeleting {
				return res, err
			}
			return res, wake(ctx, state, in.Pool, []string{in.From})
		case activities.PoolGone:
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		case activities.Superseded:
			return superseded(), nil
		case activities.RolledBack:
			return rolledBackEarlier(ctx, in, claim.Earlier)
		case activities.Refused:
			// The target is not protected after all (the config was made
			// again since the Protect): nothing claimed, roll back as
			// after a refused Protect.
			check = *claim.Refusal
		}
	}
	var release []string
	var res *wfapi.SwitchResult
	if check.OK {
		if claim.Displaced != "" {
			release = append(release, claim.Displaced)
		}
		res, err = confirm(ctx, state, in, claim.ResourceVersion)
		if in.FromDeleting {
			release = append(release, in.From)
		}
	} else {
		// Nothing claimed: Protect or Claim refused the target.
		atStep(ctx, state, "RollBack")
		res, err = rollBack(ctx, in, check, "")
	}
	if err != nil || res.Outcome == wfapi.OutcomePoolGone {
		return res, err
	}
	if err := wake(ctx, state, in.Pool, release); err != nil {
		return nil, err
	}
	return res, nil
}

// atStep records the step the switch is at, where the state query and the Web
// UI (the workflow's current details) show it. Current details are not
// part of the history: setting them issues no command.
func atStep(ctx workflow.Context, state *wfapi.SwitchState, step string) {
	state.Step = step
	workflow.SetCurrentDetails(ctx, state.Details())
}

// ended records the switch's outcome, as atStep records its steps.
func ended(ctx workflow.Context, state *wfapi.SwitchState, outcome string) {
	state.Step, state.Outcome = "done", outcome
	workflow.SetCurrentDetails(ctx, state.Details())
}

// protectBeforeClaim runs the first Protect, and lets a `reresolve` that
// arrives before it is done interrupt it: the step may be failing for as
// long as its cause lasts (an admission policy refusing the finalizer), and
// the pool may ask for another move meanwhile (the starter signals when it
// does). It reports yielding when it did. The switch may give way only if
// nothing of its move is written: a signal can also come while the task's
// earlier run has already claimed, or moved the class (the server refuses
// that run's completion for the signal, and the task runs again with the
// signal waiting), so the Claim that follows only looks, and the switch
// continues as new with no input only if the class holds nothing of this
// run (see move). From the claim on, a signal waits for the switch's end
// (finish).
func protectBeforeClaim(ctx workflow.Context, in wfapi.SwitchInput) (check activities.TargetCheck, yielding bool, err error) {
	pctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	f := step(pctx, act.Protect,
		activities.ProtectInput{Config: in.To, Class: in.Class, FromCache: true, Pool: in.Pool})
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	signalled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	sel.AddReceive(reresolve, func(workflow.ReceiveChannel, bool) { signalled = true })
	sel.Select(ctx)
	if signalled {
		cancel()
		return check, true, nil
	}
	err = f.Get(ctx, &check)
	return check, false, err
}

// confirm names the target in configRef and drops the claim. Confirm
// reads the target live once the pool shows the claim standing: that read,
// after the claim, is the switch's one check of its target (see "Why the
// live read follows the claim" in docs/switch-protocol.md). A target it
// finds unprotected is a config deleted, released and created again under
// the name between the Protect and the claim (the Claim trusted a cache
// that still showed the old one): the claim now holds its release, so it
// is protected again and confirmed. Any other refusal (missing, of another
// class, in deletion) rolls back. Being local, Confirm may follow an
// earlier run of itself whatever its attempt number.
func confirm(ctx workflow.Context, state *wfapi.SwitchState, in wfapi.SwitchInput, claimed string) (*wfapi.SwitchResult, error) {
	settle := activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation, ResourceVersion: claimed, Claimed: true,
	}
	atStep(ctx, state, "Confirm")
	var w activities.PoolWrite
	if err := step(ctx, act.Confirm, settle).Get(ctx, &w); err != nil {
		return nil, err
	}
	if w.Outcome == activities.Refused && w.Refusal.Reason == v1alpha1.ReasonSandboxConfigNotProtected {
		atStep(ctx, state, "Protect")
		var check activities.TargetCheck
		if err := step(ctx, act.Protect,
			activities.ProtectInput{Config: in.To, Class: in.Class, Pool: in.Pool}).Get(ctx, &check); err != nil {
			return nil, err
		}
		if !check.OK {
			atStep(ctx, state, "RollBack")
			return rollBack(ctx, in, check, claimed)
		}
		atStep(ctx, state, "Confirm")
		w = activities.PoolWrite{}
		if err := step(ctx, act.Confirm, settle).Get(ctx, &w); err != nil {
			return nil, err
		}
	}
	if w.Outcome == activities.Refused {
		atStep(ctx, state, "RollBack")
		return rollBack(ctx, in, *w.Refusal, claimed)
	}
	return switched(ctx, in, &w)
}

// rollBack drops the claim and records why the class keeps its config,
// unless it finds that an earlier run of this task confirmed: then the move
// stands and is reported.
func rollBack(ctx workflow.Context, in wfapi.SwitchInput, check activities.TargetCheck, claimed string) (*wfapi.SwitchResult, error) {
	message := resolve.Keeping(check.Message, in.From)
	// With no claim, the roll back writes only on the class as planned, and
	// proves a lost confirm of this run from the pool's states since the plan.
	rv := claimed
	if claimed == "" {
		rv = in.PoolResourceVersion
	}
	var w activities.PoolWrite
	if err := step(ctx, act.RollBack, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation,
		Reason: check.Reason, Message: message, ResourceVersion: rv,
		Claimed: claimed != "",
		From:    in.From, ExpectRun: in.FromRun != nil, FromRun: ptr.Deref(in.FromRun, ""),
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	switch w.Outcome {
	case activities.Landed, activities.LandedThenGone:
		return switched(ctx, in, &w)
	case activities.PoolGone:
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	case activities.Superseded:
		// Another writer took the class since the claim, or, with no
		// claim, since the plan: its state is not this switch's to report.
		return superseded(), nil
	}
	// The Warning of this appearance of the failure: the pool keeper
	// reports the same one under the same name, so it is recorded once.
	if w.FailingSince != nil {
		ev := events.FailureWarning(in.Pool, in.Class, check.Reason, message, *w.FailingSince)
		if err := step(ctx, act.RecordEvent, ev).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: check.Reason, Message: message}, nil
}

// rolledBackEarlier ends a switch whose claim finds that an earlier run of
// its task rolled back: the Warning of that roll back, keyed by the
// appearance of the failure, so recorded once; no write.
func rolledBackEarlier(ctx workflow.Context, in wfapi.SwitchInput, earlier *activities.EarlierRollBack) (*wfapi.SwitchResult, error) {
	if earlier.Reason != "" && earlier.FailingSince != nil {
		ev := events.FailureWarning(in.Pool, in.Class, earlier.Reason, earlier.Message, *earlier.FailingSince)
		if err := step(ctx, act.RecordEvent, ev).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: earlier.Reason, Message: earlier.Message}, nil
}

// wake runs WakeReleases for the configs the switch's write on pool may
// have left without users; it wakes a release only from the last user.
func wake(ctx workflow.Context, state *wfapi.SwitchState, pool wfapi.PoolRef, configs []string) error {
	if len(configs) == 0 {
		return nil
	}
	atStep(ctx, state, "WakeReleases")
	return step(ctx, act.WakeReleases, activities.WakeInput{Pool: pool, Configs: configs}).Get(ctx, nil)
}

// finish records the outcome, and hands a re-resolution asked for
// while the switch ran to a new run, which decides on a fresh live read.
func finish(ctx workflow.Context, in wfapi.SwitchInput, res *wfapi.SwitchResult, reresolve workflow.ReceiveChannel) (*wfapi.SwitchResult, error) {
	recordOutcome(ctx, in, res)
	if drain(reresolve) > 0 {
		// Empty: the next run decides on its own live read.
		return nil, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, wfapi.SwitchInput{})
	}
	return res, nil
}

// switched reports a confirmed move: its event, then its outcome.
func switched(ctx workflow.Context, in wfapi.SwitchInput, w *activities.PoolWrite) (*wfapi.SwitchResult, error) {
	switch w.Outcome {
	case activities.Superseded:
		// A confirm whose claim another writer took wrote nothing: no
		// move to report.
		return superseded(), nil
	case activities.PoolGone:
		// A confirm that found the pool gone ends the switch. One that
		// finds an earlier run had moved the class before the pool went
		// (LandedThenGone) records that move like any other.
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	note := fmt.Sprintf("sandbox class %q switched from SandboxConfig %q to %q", in.Class, in.From, in.To)
	if in.From == "" {
		note = fmt.Sprintf("sandbox class %q uses SandboxConfig %q", in.Class, in.To)
	}
	// The key is this switch's run: a retried event activity, even after a
	// worker crash, creates the same event name and so records it once.
	err := step(ctx, act.RecordEvent, events.PoolEvent{
		Pool: in.Pool, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSandboxConfigSwitched,
		Action: "Switch", Note: note, Key: "switch/" + workflow.GetInfo(ctx).WorkflowExecution.RunID,
	}).Get(ctx, nil)
	if err != nil {
		return nil, err
	}
	if w.Outcome == activities.LandedThenGone {
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed, Reason: v1alpha1.ReasonResolved, Message: resolve.ResolvedMessage(in.To)}, nil
}

// recordOutcome records the outcome where an operator looks: the Outcome
// search attribute, and the one-line summary of the move in the memo when
// the memo the run started with does not already hold it. The starter's
// start sets that memo (wfapi.SwitchStartOptions), so a move it started
// upserts only the outcome: each upsert is a command, a history event and a
// visibility write, one each per switch for a summary the start had
// written already (docs/decisions/0015-switch-overhead.md). A run that
// planned its own move (an operator's, or one continued as new) started
// with another summary and records its move's.
func recordOutcome(ctx workflow.Context, in wfapi.SwitchInput, res *wfapi.SwitchResult) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome)); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the outcome as a search attribute", "error", err)
	}
	// Metrics go through the SDK's handler, which drops them while replaying.
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": res.Outcome, "sandbox_class": string(in.Class),
		metricsClusterLabel: string(clusterOf(ctx))})
	m.Counter("ate_switches").Inc(1)
	m.Timer("ate_switch_duration").Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	summary := wfapi.SwitchSummary(in)
	if startedWith(ctx, "summary") == summary {
		return
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{"summary": summary}); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the summary in the memo", "error", err)
	}
}

// startedWith is the string the run's start (or the run it continues) put
// in its memo under key, "" when none.
func startedWith(ctx workflow.Context, key string) string {
	var v string
	if p := workflow.GetInfo(ctx).Memo.GetFields()[key]; p != nil {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			return ""
		}
	}
	return v
}

// superseded is the outcome of a switch whose claim another writer took
// over: it ends without a write or an event.
func superseded() *wfapi.SwitchResult { return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded} }
