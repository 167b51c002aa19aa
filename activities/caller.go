package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"ate.dev/orchestrator/internal/wfapi"
)

// Temporal access is a trust boundary: whoever can start workflows on the
// task queue drives these activities, with whatever input. The worker
// checks what it can (docs/security.md):
//
//   - a pool's status is written only for the pool the calling switch's
//     workflow ID names (wfapi.SwitchPool, as the switch itself asks): an
//     input naming another pool, or a caller that is no switch, is refused,
//     with no write;
//   - Confirm and RollBack write only while the class's pendingConfigRef
//     still names their target (see confirmState, claimStands), so a switch started
//     beside the real one cannot confirm a config that was released since;
//   - Claim names only a protected config, and Confirm reads its target
//     live and names it only if it is there, of the class, not in deletion
//     and protected (see liveTarget);
//   - a status write for a class the pool's spec lacks is refused (specHas);
//   - an event is recorded only for the pool the calling workflow's ID
//     names (RecordEvent);
//   - a staged rollout's status and Warning are written only for the
//     config the calling rollout's ID names (rolloutOf).
//
// The caller's ID is parsed once per activity, by ClusterGuard, and every
// check of it asks checkCaller.

// Caller is the workflow an activity runs for, as the SDK reports it (not
// an input anyone could forge): its ID parsed (wfapi.ParseWorkflowID) and
// its run.
type Caller struct {
	wfapi.WorkflowRef
	RunID string
}

// callerOfInfo parses the caller of the activity info describes.
func callerOfInfo(info activity.Info) Caller {
	return Caller{WorkflowRef: wfapi.ParseWorkflowID(info.WorkflowExecution.ID), RunID: info.WorkflowExecution.RunID}
}

type callerKey struct{}

// withCaller hands the caller, parsed once, to the activity ctx runs and
// to every check it makes (ClusterGuard).
func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf is the caller of the activity ctx runs: the one ClusterGuard
// parsed, or, for an activity run by a worker without it (a test's
// activity environment), its ID parsed here: the checks are the same,
// only not shared. Outside an activity (unit tests call the methods
// directly) there is none.
func callerOf(ctx context.Context) (Caller, bool) {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c, true
	}
	if activity.IsActivity(ctx) {
		return callerOfInfo(activity.GetInfo(ctx)), true
	}
	return Caller{}, false
}

// allowedCaller is the one workflow that may ask an activity to act on
// what its input names.
type allowedCaller interface {
	// valid says why the input cannot name it, whoever the caller.
	valid() error
	// refusal says why caller may not ask for it, nil when it may.
	refusal(caller Caller) error
}

// checkCaller refuses, as no retry can fix it and before anything is read
// or written, an activity whose input names an object the calling workflow
// may not act on: the one check of a caller, for every activity that
// writes.
func checkCaller(ctx context.Context, want allowedCaller) error {
	if err := want.valid(); err != nil {
		return err
	}
	caller, ok := callerOf(ctx)
	if !ok {
		return nil
	}
	return want.refusal(caller)
}

// switchOf: a pool's status and events are written only for its switch,
// the workflow its ID names (a workflow acts on that pool only).
type switchOf wfapi.PoolRef

func (s switchOf) valid() error { return validatePool(wfapi.PoolRef(s)) }

func (s switchOf) refusal(caller Caller) error {
	ref := wfapi.PoolRef(s)
	if pool, err := caller.SwitchPool(ref); err != nil || pool.Key() != ref.Key() {
		return invalidInput("workflow %q may not write WorkerPool %s: a workflow acts only on the pool its ID names", caller.ID, ref)
	}
	return nil
}

// rolloutOf: a staged rollout's status and Warnings are written only for
// the rollout of the config, the workflow its ID names.
type rolloutOf string

func (r rolloutOf) valid() error {
	if r == "" {
		return invalidInput("a rollout activity names its SandboxConfig")
	}
	return nil
}

func (r rolloutOf) refusal(caller Caller) error {
	if err := caller.CheckRollout(string(r)); err != nil {
		return invalidInput("%v", err)
	}
	return nil
}
