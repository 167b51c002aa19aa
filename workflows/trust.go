package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// Anyone who can start workflows on the task queue can start a switch, with
// any input (docs/security.md). A switch therefore acts only on the pool its
// workflow ID names (wfapi.SwitchPool, asked by Switch), and the activities
// check the same again before any pool write. And a switch whose claim was
// taken over by another writer ends as superseded, without a write or an
// event (supersededEnds).

// supersededEnds reports whether a Confirm or RollBack that found its claim
// taken over ends the switch as superseded. It is asked only when the write
// reports Superseded, which no history recorded before this change holds,
// so those replay as they ran and others record the decision.
func supersededEnds(ctx workflow.Context, w *activities.PoolWrite) bool {
	return w.Superseded && workflow.GetVersion(ctx, "settle-superseded", workflow.DefaultVersion, 1) >= 1
}

func superseded() *wfapi.SwitchResult { return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded} }

// refusedEnds reports whether a Claim or a Confirm that refused its target
// (found it missing, of another class, in deletion or unprotected: nothing
// written) makes the switch roll back with the step's reason. Asked only
// when the step reports Refused, which no history recorded before this
// change holds.
func refusedEnds(ctx workflow.Context, w *activities.PoolWrite) bool {
	return w.Refused != nil && workflow.GetVersion(ctx, "confirm-refused", workflow.DefaultVersion, 1) >= 1
}

// refusesInvalidInput reports whether a switch whose input no step
// could carry out (wfapi.SwitchInput.Problem) fails at once. Asked only of
// such an input: a history recorded before the check ran its steps.
func refusesInvalidInput(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "refuse-invalid-input", workflow.DefaultVersion, 1) >= 1
}

// keepsEarlyReresolve reports whether a switch with a move keeps a
// reresolve signal that came before its first task, for a look after its
// move. Asked only when there is one: a history recorded before drained it.
func keepsEarlyReresolve(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "keep-early-reresolve", workflow.DefaultVersion, 1) >= 1
}

// carriedMove is the unsetting of the move's search attributes (and the
// outcome) a run started with: none on a run started by the starter or an
// operator, the previous run's on one continued as new.
func carriedMove(ctx workflow.Context) []temporal.SearchAttributeUpdate {
	sa := workflow.GetTypedSearchAttributes(ctx)
	var unset []temporal.SearchAttributeUpdate
	for _, k := range []temporal.SearchAttributeKeyKeyword{searchattr.SandboxClassKey, searchattr.FromConfigKey, searchattr.ToConfigKey, searchattr.OutcomeKey} {
		if sa.ContainsKey(k) {
			unset = append(unset, k.ValueUnset())
		}
	}
	return unset
}

// dropsCarriedMove reports whether a run unsets the move a run before it
// carried over. Asked only when there is one: a history recorded before
// kept them.
func dropsCarriedMove(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "drop-carried-move", workflow.DefaultVersion, 1) >= 1
}
