package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
)

// The search attributes the workflows set themselves, beside those their
// starts set (wfapi.SwitchStartOptions).

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
