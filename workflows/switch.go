package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// SwitchInput and SwitchResult are the switch's contract (wfapi).
type (
	SwitchInput  = wfapi.SwitchInput
	SwitchResult = wfapi.SwitchResult
)

// Switch moves a class in two steps, so that a config deleted at any moment
// is never recorded as in use:
//  1. protect the target with the finalizer (refused once it is in deletion);
//  2. claim it in pendingConfigRef, which the release workflow honours;
//  3. read it live, after the claim, so a deletion that raced the claim is
//     seen (and protect it again if it is a new config under the same name);
//  4. confirm (configRef = target) or roll back (configRef unchanged);
//  5. record the event, only once the write in 4 has landed;
//  6. wake the release workflow of a config the class left in deletion.
//
// The writes that move the pool (claim, confirm, roll back) are regular
// activities: the server retries them, their inputs show in the Web UI, and
// a confirm can heartbeat that its write landed, which a retry after a lost
// completion needs when the pool is gone by then (a local activity cannot
// heartbeat).
// The other steps are local activities (see steps): each still runs in its
// order, at least once, until it succeeds, and is recorded in this switch's
// history, as one marker event instead of an activity's three events and
// the workflow task that follows them, with no round trip through the
// server's queues.
func Switch(ctx workflow.Context, in SwitchInput) (*SwitchResult, error) {
	// The input tells the shape: the children of pool workflows (histories
	// recorded before the lean switch) never carry Lean, nor come empty.
	if in.IsLean() {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		ns, name, ok := wfapi.PoolFromSwitchWorkflowID(id)
		if !ok {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a switch's workflow ID names its pool, as %s does; got %q", wfapi.PoolSwitchWorkflowID("<namespace>", "<name>"), id),
				activities.ErrInvalidInput, nil)
		}
		return leanSwitch(ctx, wfapi.PoolRef{Namespace: ns, Name: name}, in)
	}
	if err := ownPool(ctx, in.Pool); err != nil {
		return nil, err
	}
	ctx = withActivities(ctx)
	log := workflow.GetLogger(ctx)
	log.Info("switching", "pool", in.Pool.String(), "class", in.Class, "from", in.From, "to", in.To)
	// Switches recorded before the local steps replay the regular
	// activities they scheduled.
	s := steps{local: workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1) >= 1}

	var check activities.TargetCheck
	if err := s.run(ctx, act.Protect,
		activities.ProtectInput{Config: in.To, Class: in.Class}).Get(ctx, &check); err != nil {
		return nil, err
	}
	var release []string
	var claimed string
	if check.OK {
		var claim activities.PoolWrite
		if err := workflow.ExecuteActivity(ctx, act.Claim, activities.ClaimInput{
			Pool: in.Pool, Class: in.Class, Config: in.To, ResourceVersion: in.PoolResourceVersion,
		}).Get(ctx, &claim); err != nil {
			return nil, err
		}
		// The confirm or roll back writes on the claim's resourceVersion
		// (nothing else of the switch writes the pool in between). Claims
		// recorded before it existed return none: those read first.
		claimed = claim.ResourceVersion
		if claim.PoolGone {
			return finish(ctx, in, &SwitchResult{Outcome: wfapi.OutcomePoolGone})
		}
		if claim.Displaced != "" {
			release = append(release, claim.Displaced)
		}
		var live *resolve.Config
		if err := s.run(ctx, act.ReadConfig, in.To).Get(ctx, &live); err != nil {
			return nil, err
		}
		check.OK, check.Reason, check.Message = resolve.CheckTarget(in.To, live, in.Class)
		if check.OK && !live.Protected && s.reprotects(ctx) {
			// The config the claim names is not the one step 1 protected: it
			// was deleted and released before the claim landed and created
			// again under the same name (or its finalizer was taken off by
			// hand). Protect it again: the claim now stands, so no release
			// can take the finalizer off before the confirm names it (P1).
			if err := s.run(ctx, act.Protect,
				activities.ProtectInput{Config: in.To, Class: in.Class}).Get(ctx, &check); err != nil {
				return nil, err
			}
		}
	}

	var res *SwitchResult
	var err error
	if check.OK {
		res, err = confirm(ctx, s, in, claimed)
		if in.FromDeleting {
			release = append(release, in.From)
		}
	} else {
		res, err = rollBack(ctx, s, in, check, claimed)
	}
	if err != nil || res.Outcome == wfapi.OutcomePoolGone {
		return res, err
	}
	if len(release) > 0 {
		if err := s.run(ctx, act.WakeReleases, release).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	return finish(ctx, in, res)
}

// steps runs the switch's steps other than its pool writes: as local
// activities since the "local-steps" change, as regular ones in the
// histories recorded before it.
//
// Running them locally keeps what the switch relies on. Order: a local
// activity is awaited like any other before the next step starts. At least
// once: a worker that dies during one leaves the workflow task open, and
// the worker that takes it over once the task times out runs the step
// again; every step is idempotent. Never giving up: see withLocalActivities.
// What it gives up: a local activity's input is not in the history (its
// type and result are, in a marker), and a step runs inside a workflow task,
// so the worker needs enough workflow task pollers.
type steps struct{ local bool }

func (s steps) run(ctx workflow.Context, activity any, args ...any) workflow.Future {
	if s.local {
		return workflow.ExecuteLocalActivity(withLocalActivities(ctx), activity, args...)
	}
	return workflow.ExecuteActivity(ctx, activity, args...)
}

// reprotects reports whether the switch protects a recreated target again.
// A switch with local steps was started by code that does, so it asks no
// version (which would add a marker and a search attribute update).
func (s steps) reprotects(ctx workflow.Context) bool {
	return s.local || workflow.GetVersion(ctx, "protect-recreated-target", workflow.DefaultVersion, 1) == 1
}

// eventsLostConfirms reports whether a confirm that found the pool gone
// after an earlier attempt had moved the class still records the move's
// event; as reprotects, a switch with local steps always does.
func (s steps) eventsLostConfirms(ctx workflow.Context) bool {
	return s.local || workflow.GetVersion(ctx, "switched-event-after-lost-confirm", workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

func confirm(ctx workflow.Context, s steps, in SwitchInput, claimed string) (*SwitchResult, error) {
	var w activities.PoolWrite
	if err := workflow.ExecuteActivity(ctx, act.Confirm, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation, ResourceVersion: claimed,
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if refusedEnds(ctx, &w) {
		return rollBack(ctx, s, in, *w.Refused, claimed)
	}
	return switched(ctx, s, in, &w)
}

// switched reports a confirmed move: its event, then its outcome.
func switched(ctx workflow.Context, s steps, in SwitchInput, w *activities.PoolWrite) (*SwitchResult, error) {
	// A confirm whose claim another writer took wrote nothing: no move to
	// report (see supersededEnds).
	if supersededEnds(ctx, w) {
		return superseded(), nil
	}
	// A confirm that found the pool gone ends the switch, unless an earlier
	// attempt had moved the class before the pool went (its completion lost
	// with a worker): that move is recorded like any other. Histories from
	// before this change never carry Landed, so they never get here.
	if w.PoolGone && (!w.Landed || !s.eventsLostConfirms(ctx)) {
		return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	note := fmt.Sprintf("sandbox class %q switched from SandboxConfig %q to %q", in.Class, in.From, in.To)
	if in.From == "" {
		note = fmt.Sprintf("sandbox class %q uses SandboxConfig %q", in.Class, in.To)
	}
	// The key is this switch's run: a retried event activity, even after a
	// worker crash, creates the same event name and so records it once.
	err := s.run(ctx, act.RecordEvent, activities.EventInput{
		Pool: in.Pool, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSandboxConfigSwitched,
		Action: "Switch", Note: note, Key: "switch/" + workflow.GetInfo(ctx).WorkflowExecution.RunID,
	}).Get(ctx, nil)
	if err != nil {
		return nil, err
	}
	if w.PoolGone {
		return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	_, reason, message := resolve.CheckTarget(in.To, &resolve.Config{Class: in.Class}, in.Class)
	return &SwitchResult{Outcome: wfapi.OutcomeConfirmed, Reason: reason, Message: message}, nil
}

func rollBack(ctx workflow.Context, s steps, in SwitchInput, check activities.TargetCheck, claimed string) (*SwitchResult, error) {
	message := resolve.Keeping(check.Message, in.From)
	var w activities.PoolWrite
	if err := workflow.ExecuteActivity(ctx, act.RollBack, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation,
		Reason: check.Reason, Message: message, ResourceVersion: claimed, Claimed: claimed != "",
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if w.PoolGone {
		return &SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	if supersededEnds(ctx, &w) {
		return superseded(), nil
	}
	if err := s.run(ctx, act.RecordEvent,
		warning(in.Pool, in.Class, check.Reason, message, in.Generation)).Get(ctx, nil); err != nil {
		return nil, err
	}
	return &SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: check.Reason, Message: message}, nil
}

// warning is the Warning event of a failed resolution (see
// activities.WarningEvent).
func warning(pool activities.PoolRef, class v1alpha1.SandboxClass, reason, message string, generation int64) activities.EventInput {
	return activities.WarningEvent(pool, class, reason, message, generation)
}

// finish records the outcome where an operator looks: the Outcome search
// attribute and the one-line summary in the memo.
func finish(ctx workflow.Context, in SwitchInput, res *SwitchResult) (*SwitchResult, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome)); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the outcome as a search attribute", "error", err)
	}
	// Metrics go through the SDK's handler, which drops them while replaying.
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": res.Outcome, "sandbox_class": string(in.Class)})
	m.Counter("ate_switches").Inc(1)
	m.Timer("ate_switch_duration").Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	summary := wfapi.SwitchSummary(in) + ": " + res.Outcome
	if err := workflow.UpsertMemo(ctx, map[string]any{"summary": summary}); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the summary in the memo", "error", err)
	}
	return res, nil
}
