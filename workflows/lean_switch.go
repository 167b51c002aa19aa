package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/poolevents"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// leanSwitch is a switch in the lean shape: a top-level execution with the
// ID wfapi.PoolSwitchWorkflowID, which names the pool it acts on. The
// starter starts it with the move its cache asked for; the ID's conflict
// policy keeps one running per pool, so a pool's switches run one at a time.
// It takes two workflow tasks:
//
//  1. Protect the target (local), then Claim it (a regular activity, run
//     eagerly by the worker that completed the task). The claim is the one
//     step whose result must be in the history before anything else is
//     decided: it is written only while the class still names From, and a
//     crash after it must not decide again on a state the claim changed.
//  2. ReadConfig live, Confirm or RollBack, RecordEvent, WakeReleases (all
//     local), and the Outcome.
//
// A crash in the second task re-runs all of it: ReadConfig reads again, and
// a Confirm whose earlier run landed writes nothing; a RollBack that finds
// the class on the config knows an earlier run confirmed (nothing else
// writes the class between the claim and the switch's end), and the event,
// keyed by the run, is recorded once.
func leanSwitch(ctx workflow.Context, pool wfapi.PoolRef, in SwitchInput) (*SwitchResult, error) {
	if in.Pool.Namespace != "" && (in.Pool.Namespace != pool.Namespace || in.Pool.Name != pool.Name) {
		// The ID names the pool: a switch acts on that pool only, whoever
		// started it with whatever input.
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("switch workflow of WorkerPool %s was given WorkerPool %s", pool, in.Pool),
			activities.ErrInvalidInput, nil)
	}
	in.Pool.Namespace, in.Pool.Name = pool.Namespace, pool.Name
	if problem := in.Problem(); problem != "" && refusesInvalidInput(ctx) {
		// A switch started by hand with what no step could carry out:
		// fail now, before any step, rather than retry a step forever
		// while holding the pool's switch ID.
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("switch of WorkerPool %s refused: %s", pool, problem), activities.ErrInvalidInput, nil)
	}
	log := workflow.GetLogger(ctx)
	state := wfapi.SwitchState{Pool: pool.String(), Step: "deciding"}
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
	// its move, and continues as new for the look (see finishLean).
	if !in.IsMove() || reresolve.Len() == 0 || !keepsEarlyReresolve(ctx) {
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
		attrs := []temporal.SearchAttributeUpdate{searchattr.WorkerPoolKey.ValueSet(pool.String())}
		if carried := carriedMove(ctx); len(carried) > 0 && dropsCarriedMove(ctx) {
			attrs = append(attrs, carried...)
		}
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			log.Warn("could not record the pool as a search attribute", "error", err)
		}
		state.Step = "Observe"
		var obs activities.Observation
		if err := workflow.ExecuteActivity(ctx, act.Observe, in.Pool).Get(ctx, &obs); err != nil {
			return nil, err
		}
		planned, ok := planFromObservation(in.Pool, &obs)
		if !ok {
			res := &SwitchResult{Outcome: wfapi.OutcomeUpToDate}
			if !obs.Exists {
				res.Outcome = wfapi.OutcomePoolGone
			}
			state.Step, state.Outcome = "done", res.Outcome
			return finishLean(ctx, in, res, reresolve)
		}
		in = planned
		if err := workflow.UpsertTypedSearchAttributes(ctx, wfapi.SwitchAttributes(in)...); err != nil {
			log.Warn("could not record the move as search attributes", "error", err)
		}
	}
	state.Class, state.From, state.To, state.Abandon = string(in.Class), in.From, in.To, in.Abandon
	log.Info("switching", "pool", in.Pool.String(), "class", in.Class, "from", in.From, "to", in.To, "abandon", in.Abandon)

	res, err := leanSteps(ctx, in, &state)
	if err != nil {
		return nil, err
	}
	state.Step, state.Outcome = "done", res.Outcome
	return finishLean(ctx, in, res, reresolve)
}

// leanSteps runs the move, step by step, as the Switch doc describes.
func leanSteps(ctx workflow.Context, in SwitchInput, state *wfapi.SwitchState) (*SwitchResult, error) {
	local := withLocalActivities(ctx)
	if in.To == "" {
		state.Step = "AbandonClaim"
		var w activities.PoolWrite
		if err := workflow.ExecuteLocalActivity(local, act.AbandonClaim, activities.ClaimInput{
			Pool: in.Pool, Class: in.Class, Config: in.Abandon,
		}).Get(ctx, &w); err != nil {
			return nil, err
		}
		if w.PoolGone {
			return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		}
		if err := wake(ctx, state, []string{in.Abandon}); err != nil {
			return nil, err
		}
		return &SwitchResult{Outcome: wfapi.OutcomeRolledBack}, nil
	}

	s := steps{local: true}
	state.Step = "Protect"
	check, yieldErr := protectBeforeClaim(ctx, local, in)
	if yieldErr != nil {
		return nil, yieldErr // failed, or yields: continues as new, nothing claimed
	}
	var release []string
	var claimed string
	var claim activities.PoolWrite
	if check.OK {
		state.Step = "Claim"
		if err := workflow.ExecuteActivity(ctx, act.Claim, activities.ClaimInput{
			Pool: in.Pool, Class: in.Class, Config: in.To, ResourceVersion: in.PoolResourceVersion,
			ExpectFrom: true, From: in.From,
			ExpectSpec: in.SpecConfigRef != nil, SpecConfigRef: ptr.Deref(in.SpecConfigRef, ""),
		}).Get(ctx, &claim); err != nil {
			return nil, err
		}
		switch {
		case claim.PoolGone:
			return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		case claim.Superseded:
			return &SwitchResult{Outcome: wfapi.OutcomeSuperseded}, nil
		case refusedEnds(ctx, &claim):
			// The target is not protected after all (the Claim was
			// scheduled without this Protect, or the config was made
			// again since): nothing claimed, roll back as after a
			// refused Protect.
			check = *claim.Refused
		}
	}
	if check.OK {
		claimed = claim.ResourceVersion
		if claim.Displaced != "" {
			release = append(release, claim.Displaced)
		}
		// The pool now names the target, so a release that lists the pools
		// sees it: what the live read finds can be trusted.
		state.Step = "ReadConfig"
		var live *resolve.Config
		if err := workflow.ExecuteLocalActivity(local, act.ReadConfig, in.To).Get(ctx, &live); err != nil {
			return nil, err
		}
		check.OK, check.Reason, check.Message = resolve.CheckTarget(in.To, live, in.Class)
		if check.OK && !live.Protected {
			// Deleted, released and created again under the same name
			// between the protection and the claim: protect it again.
			state.Step = "Protect"
			if err := workflow.ExecuteLocalActivity(local, act.Protect,
				activities.ProtectInput{Config: in.To, Class: in.Class, Pool: in.Pool}).Get(ctx, &check); err != nil {
				return nil, err
			}
		}
	}

	var res *SwitchResult
	var err error
	if check.OK {
		state.Step = "Confirm"
		res, err = confirmLean(ctx, s, in, claimed)
		if in.FromDeleting {
			release = append(release, in.From)
		}
	} else {
		state.Step = "RollBack"
		res, err = rollBackLean(ctx, s, in, check, claimed)
	}
	if err != nil || res.Outcome == wfapi.OutcomePoolGone {
		return res, err
	}
	if err := wake(ctx, state, release); err != nil {
		return nil, err
	}
	return res, nil
}

// yieldBeforeClaim is the change that lets a switch yield to a `reresolve`
// received before its claim. Asked only when such a signal interrupts the
// first Protect, so a history without one carries no marker, and one
// recorded before the change (the signal then waited for the switch's end)
// replays as it ran.
const yieldBeforeClaim = "yield-before-claim"

// protectBeforeClaim runs the first Protect, and yields to a `reresolve`
// that arrives before it is done: the step may be failing for as long as
// its cause lasts (an admission policy refusing the finalizer), and the
// pool may ask for another move meanwhile (the starter signals when it
// does). Nothing of the move is written before the claim, so the step is
// cancelled and the switch continues as new with no input: the next run
// plans, from its own live read, what the pool then asks for, as an
// operator's re-resolution does. From the claim on, a signal waits for the
// switch's end (finishLean).
func protectBeforeClaim(ctx, local workflow.Context, in SwitchInput) (activities.TargetCheck, error) {
	var check activities.TargetCheck
	pctx, cancel := workflow.WithCancel(local)
	defer cancel()
	f := workflow.ExecuteLocalActivity(pctx, act.Protect,
		activities.ProtectInput{Config: in.To, Class: in.Class, FromCache: true, Pool: in.Pool})
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	signalled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	sel.AddReceive(reresolve, func(workflow.ReceiveChannel, bool) { signalled = true })
	sel.Select(ctx)
	if signalled && workflow.GetVersion(ctx, yieldBeforeClaim, workflow.DefaultVersion, 1) >= 1 {
		drain(reresolve)
		cancel()
		workflow.GetLogger(ctx).Info("re-resolution asked before the claim; yielding", "pool", in.Pool.String(), "class", in.Class, "to", in.To)
		return check, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, SwitchInput{})
	}
	// Done, or a history recorded before the change: the signal stays for
	// finishLean.
	err := f.Get(ctx, &check)
	return check, err
}

// confirmLean confirms as confirm does, with a Confirm that, being local,
// may follow an earlier run of itself whatever its attempt number.
func confirmLean(ctx workflow.Context, s steps, in SwitchInput, claimed string) (*SwitchResult, error) {
	var w activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(withLocalActivities(ctx), act.Confirm, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation, ResourceVersion: claimed,
		Local: true, Claimed: true,
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if refusedEnds(ctx, &w) {
		return rollBackLean(ctx, s, in, *w.Refused, claimed)
	}
	return switched(ctx, s, in, &w)
}

// rollBackLean rolls back as rollBack does, unless it finds that an earlier
// run of this task confirmed: then the move stands and is reported.
func rollBackLean(ctx workflow.Context, s steps, in SwitchInput, check activities.TargetCheck, claimed string) (*SwitchResult, error) {
	message := resolve.Keeping(check.Message, in.From)
	var w activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(withLocalActivities(ctx), act.RollBack, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation,
		Reason: check.Reason, Message: message, ResourceVersion: claimed,
		Local: true, Claimed: claimed != "",
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if w.Landed {
		return switched(ctx, s, in, &w)
	}
	if w.PoolGone {
		return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	if supersededEnds(ctx, &w) {
		// Another writer took the class since the claim: its state is not
		// this switch's to report.
		return superseded(), nil
	}
	// The Warning of this appearance of the failure: the pool reconciler
	// reports the same one under the same name, so it is recorded once.
	ev := warning(in.Pool, in.Class, check.Reason, message, in.Generation)
	if w.FailingSince != nil {
		ev = poolevents.FailureWarning(in.Pool, in.Class, check.Reason, message, *w.FailingSince)
	}
	if err := s.run(ctx, act.RecordEvent, ev).Get(ctx, nil); err != nil {
		return nil, err
	}
	return &SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: check.Reason, Message: message}, nil
}

func wake(ctx workflow.Context, state *wfapi.SwitchState, configs []string) error {
	if len(configs) == 0 {
		return nil
	}
	state.Step = "WakeReleases"
	return workflow.ExecuteLocalActivity(withLocalActivities(ctx), act.WakeReleases, configs).Get(ctx, nil)
}

// finishLean records the outcome, and hands a re-resolution asked for
// while the switch ran to a new run, which decides on a fresh live read.
func finishLean(ctx workflow.Context, in SwitchInput, res *SwitchResult, reresolve workflow.ReceiveChannel) (*SwitchResult, error) {
	if _, err := finish(ctx, in, res); err != nil {
		return nil, err
	}
	if drain(reresolve) > 0 {
		// Empty: the next run decides on its own live read.
		return nil, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, SwitchInput{})
	}
	return res, nil
}

// planFromObservation is the move a live observation asks for, as the
// starter plans it from its cache.
func planFromObservation(pool wfapi.PoolRef, obs *activities.Observation) (SwitchInput, bool) {
	if !obs.Exists {
		return SwitchInput{}, false
	}
	m, ok := resolve.NextMove(obs.Spec, &obs.Status, obs.Configs)
	if !ok {
		return SwitchInput{}, false
	}
	pool.UID = obs.UID
	return wfapi.MoveInput(pool, m, obs.Generation, obs.ResourceVersion), true
}
