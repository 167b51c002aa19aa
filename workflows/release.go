package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// Fallback wake-ups of a release that waits for pools to move: signals do
// the real work, the timer only covers one that was lost. It backs off so a
// config held for days costs little.
const (
	firstFallback = 30 * time.Second
	maxFallback   = 10 * time.Minute
)

// maxConflictLooks is how many looks a release run takes again at once
// after its finalizer patch met a newer config before it continues as new.
// The waiting path continues as new when the history grows long; this path
// never waits, so without a bound a config that keeps changing under the
// patch (a controller rewriting it, an outage of whatever answers its
// writes) would grow one history without end. About 20 events a look.
const maxConflictLooks = 25

// Release lets a SandboxConfig in deletion go once no pool uses it. It
// removes the protection finalizer only after a live list of WorkerPools,
// made after the config was marked for deletion, found no pool naming it in
// configRef or pendingConfigRef (P2): Unprotect's, which lists and removes
// in one step. Until then it waits for a `recheck`
// signal, or a fallback timer, and looks again.
func Release(ctx workflow.Context, in wfapi.ReleaseInput) (string, error) {
	if in.Config == "" {
		return "", temporal.NewNonRetryableApplicationError("a release workflow needs the SandboxConfig's name",
			activities.ErrInvalidInput, nil)
	}
	if err := wfapi.CheckReleaseID(workflow.GetInfo(ctx).WorkflowExecution.ID, in.Config); err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrInvalidInput, nil)
	}
	recordCluster(ctx, clusterOf(ctx))
	ctx = withActivities(ctx)
	log := workflow.GetLogger(ctx)
	if in.Since == 0 {
		in.Since = workflow.GetInfo(ctx).WorkflowStartTime.Unix()
	}
	recheck := workflow.GetSignalChannel(ctx, wfapi.SignalRecheck)
	fallback := firstFallback
	state := wfapi.ReleaseState{Config: in.Config, Checks: in.Checks}
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryState, func() (wfapi.ReleaseState, error) {
		return state, nil
	}); err != nil {
		return "", err
	}
	conflicts := 0
	for {
		drain(recheck)
		in.Checks++
		state.Checks = in.Checks
		users, done, err := look(ctx, in.Config)
		if err != nil {
			return "", err
		}
		state.UserCount, state.Users = 0, nil
		if users != nil {
			state.UserCount, state.Users = users.Count, users.Sample
		}
		if done != "" {
			setOutcome(ctx, &state.Outcome, done)
			workflow.SetCurrentDetails(ctx, state.Details())
			m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": done, metricsClusterLabel: string(clusterOf(ctx))})
			m.Counter("ate_releases").Inc(1)
			m.Timer("ate_release_wait").Record(workflow.Now(ctx).Sub(time.Unix(in.Since, 0)))
			log.Info("release finished", "config", in.Config, "outcome", done)
			// A wake-up that came during the look may be the deletion of
			// another incarnation of the config, created again under the
			// same name after the one this look checked was released: a
			// new run looks at whatever the name holds now (it ends at once
			// if nothing).
			if drain(recheck) > 0 {
				log.Info("a wake-up came during the release's last look; looking again in a new run", "config", in.Config)
				return "", workflow.NewContinueAsNewError(ctx, wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: in.Config, Checks: in.Checks})
			}
			return done, nil
		}
		if users == nil {
			// The finalizer patch met a newer config: look again at once,
			// in a new run once this one has looked often enough.
			conflicts++
			if conflicts >= maxConflictLooks || shouldContinueAsNew(ctx) {
				log.Info("SandboxConfig changed under every release patch; continuing as new", "config", in.Config, "conflicts", conflicts)
				return "", workflow.NewContinueAsNewError(ctx, wfapi.ReleaseWorkflow, in)
			}
			continue
		}
		setOutcome(ctx, &state.Outcome, wfapi.OutcomeWaiting)
		workflow.SetCurrentDetails(ctx, state.Details())
		log.Info("SandboxConfig still in use; waiting", "config", in.Config, "pools", users.Count, "sample", users.Sample)

		if shouldContinueAsNew(ctx) {
			return "", workflow.NewContinueAsNewError(ctx, wfapi.ReleaseWorkflow, in)
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(recheck, func(c workflow.ReceiveChannel, _ bool) { c.ReceiveAsync(nil); fallback = firstFallback })
		sel.AddFuture(workflow.NewTimer(timerCtx, fallback), func(workflow.Future) { fallback = min(2*fallback, maxFallback) })
		sel.Select(ctx)
		cancel()
	}
}

// look takes one look at the config, in the order that makes a release safe:
// live read, cache, then the live list and the finalizer removal (one step,
// Unprotect). It returns the pools still
// using the config (a count and a sample), or a final outcome, or neither
// when the finalizer patch conflicted and the look must be taken again. The
// removal is bound to the incarnation the live read saw (its UID and
// resourceVersion): a config created again under the name since is not
// touched, and gets its own look.
func look(ctx workflow.Context, config string) (users *activities.Users, done string, err error) {
	var c *resolve.Config
	if err := workflow.ExecuteActivity(ctx, act.ReadConfig, config).Get(ctx, &c); err != nil {
		return nil, "", err
	}
	if c == nil {
		return nil, wfapi.OutcomeReleased, nil
	}
	if !c.Deleting || !c.Protected {
		return nil, wfapi.OutcomeNotNeeded, nil
	}
	var found activities.Users
	if err := workflow.ExecuteActivity(ctx, act.CachedUsers, config).Get(ctx, &found); err != nil {
		return nil, "", err
	}
	if found.Count > 0 {
		return &found, "", nil
	}
	var removed activities.UnprotectResult
	in := activities.UnprotectInput{Config: config, UID: c.UID, ResourceVersion: c.ResourceVersion}
	if err := workflow.ExecuteActivity(withLiveList(ctx), act.Unprotect, in).Get(ctx, &removed); err != nil {
		return nil, "", err
	}
	switch removed.Result {
	case activities.ReleaseRemoved, activities.ReleaseGone:
		return nil, wfapi.OutcomeReleased, nil
	case activities.ReleaseNotNeeded:
		return nil, wfapi.OutcomeNotNeeded, nil
	case activities.ReleaseConflict:
		return nil, "", nil
	case activities.ReleaseInUse:
		// Unprotect's live list found a pool the cache missed (not synced
		// yet, or a claim written a moment ago): wait, as for any user.
		return &removed.Users, "", nil
	}
	return nil, "", fmt.Errorf("unexpected result %q releasing SandboxConfig %q", removed.Result, config)
}

func setOutcome(ctx workflow.Context, current *string, outcome string) {
	if *current == outcome {
		return
	}
	*current = outcome
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(outcome)); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the outcome as a search attribute", "error", err)
	}
}
