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
//     still names their target (see settleAllowed), so a switch started
//     beside the real one cannot confirm a config that was released since;
//   - Claim names only a protected config, and Confirm reads its target
//     live and names it only if it is there, of the class, not in deletion
//     and protected (see liveTarget);
//   - a status write for a class the pool's spec lacks is refused (specHas);
//   - an event is recorded only for the pool the calling workflow's ID
//     names (RecordEvent);
//   - a staged rollout's status and Warning are written only for the
//     config the calling rollout's ID names (checkRolloutCaller).

// callerNamesPool reports whether a workflow ID is the switch ID of the
// pool ref names, as wfapi.SwitchPool derives it: the only workflow that
// writes a pool's status or records its events.
func callerNamesPool(id string, ref wfapi.PoolRef) bool {
	pool, err := wfapi.SwitchPool(id, ref)
	return err == nil && pool.Key() == ref.Key()
}

// checkCaller refuses, as no retry can fix it, a pool write asked by a
// workflow whose ID names another pool. Outside an activity (a unit test
// calling the method) there is no caller to check.
func checkCaller(ctx context.Context, ref wfapi.PoolRef) error {
	if !activity.IsActivity(ctx) {
		return nil
	}
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	if !callerNamesPool(id, ref) {
		return invalidInput("workflow %q may not write WorkerPool %s: a workflow acts only on the pool its ID names", id, ref)
	}
	return nil
}
