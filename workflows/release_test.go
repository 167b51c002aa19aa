package workflows

import (
	"ate.dev/orchestrator/internal/searchattr"
	"context"
	"errors"
	"fmt"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestReleaseContinuesAsNewOnItsConflictPath: a config whose finalizer
// patch conflicts on every look is looked at again at once, and after
// maxConflictLooks looks the run continues as new with its count of checks,
// so its history stays bounded however long the conflicts last. A release
// whose patch lands after a few conflicts ends released in the same run.
func TestReleaseContinuesAsNewOnItsConflictPath(t *testing.T) {
	tests := []struct {
		name          string
		conflicts     int // before the patch lands; -1: never
		wantUnprotect int
		wantContinued bool
	}{
		{name: "conflicts without end: continued as new", conflicts: -1,
			wantUnprotect: maxConflictLooks, wantContinued: true},
		{name: "a few conflicts, then released in the same run", conflicts: 3,
			wantUnprotect: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := newEnv(t)
			env.OnActivity(act.ReadConfig, mock.Anything, "cfg").
				Return(&resolve.Config{Name: "cfg", Deleting: true, Protected: true}, nil)
			env.OnActivity(act.CachedUsers, mock.Anything, "cfg").Return(activities.Users{}, nil)
			unprotects := 0
			env.OnActivity(act.Unprotect, mock.Anything, mock.Anything).Return(func(context.Context, activities.UnprotectInput) (activities.UnprotectResult, error) {
				unprotects++
				if tt.conflicts >= 0 && unprotects > tt.conflicts {
					return activities.UnprotectResult{Result: activities.ReleaseRemoved}, nil
				}
				return activities.UnprotectResult{Result: activities.ReleaseConflict}, nil
			})

			env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg", Checks: 7})
			require.True(t, env.IsWorkflowCompleted())
			require.Equal(t, tt.wantUnprotect, unprotects)
			err := env.GetWorkflowError()
			if !tt.wantContinued {
				require.NoError(t, err)
				var outcome string
				require.NoError(t, env.GetWorkflowResult(&outcome))
				require.Equal(t, wfapi.OutcomeReleased, outcome)
				return
			}
			var can *workflow.ContinueAsNewError
			require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
			require.Equal(t, wfapi.ReleaseWorkflow, can.WorkflowType.Name)
			var next wfapi.ReleaseInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, "cfg", next.Config)
			require.Equal(t, 7+maxConflictLooks, next.Checks, "the new run carries the checks taken")
		})
	}
}

// TestReleaseKeepsAConfigTheLiveListFindsInUse: the worker's cache misses a
// pool that names the config (not synced yet, or behind); Unprotect's live
// list finds it and removes nothing, and the release waits.
func TestReleaseKeepsAConfigTheLiveListFindsInUse(t *testing.T) {
	env, order := newEnv(t)
	env.OnActivity(act.ReadConfig, mock.Anything, "cfg").
		Return(&resolve.Config{Name: "cfg", Deleting: true, Protected: true}, nil)
	env.OnActivity(act.CachedUsers, mock.Anything, "cfg").Return(activities.Users{}, nil)
	env.OnActivity(act.Unprotect, mock.Anything, mock.Anything).Return(activities.UnprotectResult{
		Result: activities.ReleaseInUse, Users: activities.Users{Count: 1, Sample: []string{"ns/late"}}}, nil)
	var state wfapi.ReleaseState
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(wfapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&state))
		env.CancelWorkflow()
	}, firstFallback/2)

	env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg"})
	require.Equal(t, []string{"ReadConfig", "CachedUsers", "Unprotect"}, *order, "one live list: Unprotect's")
	require.Equal(t, []string{"ns/late"}, state.Users)
	require.Equal(t, 1, state.UserCount)
	require.Equal(t, wfapi.OutcomeWaiting, state.Outcome)
}

// TestReleaseUnprotectsTheIncarnationItLookedAt: the finalizer removal
// names the incarnation (UID, resourceVersion) the look's live read saw.
// A refusal because Unprotect's own live list found a user makes the
// release wait, naming the users.
func TestReleaseUnprotectsTheIncarnationItLookedAt(t *testing.T) {
	env, order := newEnv(t)
	env.OnActivity(act.ReadConfig, mock.Anything, "cfg").
		Return(&resolve.Config{Name: "cfg", Deleting: true, Protected: true, UID: "u1", ResourceVersion: "42"}, nil)
	env.OnActivity(act.CachedUsers, mock.Anything, "cfg").Return(activities.Users{}, nil)
	var got []activities.UnprotectInput
	env.OnActivity(act.Unprotect, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.UnprotectInput) (activities.UnprotectResult, error) {
		got = append(got, in)
		return activities.UnprotectResult{Result: activities.ReleaseInUse, Users: activities.Users{Count: 1, Sample: []string{"ns/claimer"}}}, nil
	})
	var state wfapi.ReleaseState
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(wfapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&state))
		env.CancelWorkflow()
	}, firstFallback/2)

	env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg"})
	require.Equal(t, []string{"ReadConfig", "CachedUsers", "Unprotect"}, *order)
	require.Equal(t, []activities.UnprotectInput{{Config: "cfg", UID: "u1", ResourceVersion: "42"}}, got)
	require.Equal(t, wfapi.OutcomeWaiting, state.Outcome, "refused: the release waits")
	require.Equal(t, []string{"ns/claimer"}, state.Users)
}

// TestReleaseLooksAgainAfterALateRecheck: a recheck that arrives while the
// look that released the config runs may be the deletion of a config
// created again under the name: the run continues as new (a fresh look)
// instead of ending; without a pending recheck the release ends released.
func TestReleaseLooksAgainAfterALateRecheck(t *testing.T) {
	tests := []struct {
		name          string
		signal        bool
		wantContinued bool
	}{
		{name: "a recheck during the last look: a new run", signal: true, wantContinued: true},
		{name: "no recheck: released"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := newEnv(t)
			env.OnActivity(act.ReadConfig, mock.Anything, "cfg").
				Return(&resolve.Config{Name: "cfg", Deleting: true, Protected: true, UID: "u1"}, nil)
			env.OnActivity(act.CachedUsers, mock.Anything, "cfg").Return(activities.Users{}, nil)
			env.OnActivity(act.Unprotect, mock.Anything, mock.Anything).Return(func(context.Context, activities.UnprotectInput) (activities.UnprotectResult, error) {
				if tt.signal {
					env.SignalWorkflow(wfapi.SignalRecheck, nil)
				}
				return activities.UnprotectResult{Result: activities.ReleaseRemoved}, nil
			})

			env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg", Checks: 3, Since: 1})
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			if !tt.wantContinued {
				require.NoError(t, err)
				var outcome string
				require.NoError(t, env.GetWorkflowResult(&outcome))
				require.Equal(t, wfapi.OutcomeReleased, outcome)
				return
			}
			var can *workflow.ContinueAsNewError
			require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
			var next wfapi.ReleaseInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, wfapi.ReleaseInput{Config: "cfg", Checks: 4}, next, "a fresh look, its wait measured anew")
		})
	}
}

// A release started by hand under an ID that is not its config's release
// ID, or names no cluster, does nothing at all.
func TestReleaseActsOnlyUnderItsConfigsID(t *testing.T) {
	for _, id := range []string{testCluster.ReleaseWorkflowID("other"), "sandboxconfig/cfg/release", "my-release", testCluster.SwitchWorkflowID("ns", "cfg")} {
		t.Run(id, func(t *testing.T) {
			env, order := newEnv(t)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
			env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg"})
			require.True(t, env.IsWorkflowCompleted())
			require.ErrorContains(t, env.GetWorkflowError(), `the release workflow of SandboxConfig "cfg" has the ID <cluster>/sandboxconfig/cfg/release`)
			require.Empty(t, *order, "no step")
		})
	}
}

// Every workflow is listed under its cluster: one started by hand, without
// the KubernetesCluster search attribute, records it from its ID; one whose
// start set it upserts nothing for it.
func TestWorkflowsRecordTheirCluster(t *testing.T) {
	for _, setAtStart := range []bool{false, true} {
		t.Run(fmt.Sprintf("set at start: %t", setAtStart), func(t *testing.T) {
			env, _ := newEnv(t)
			if setAtStart {
				require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
					searchattr.KubernetesClusterKey.ValueSet(string(testCluster)))))
			}
			var upserted []string
			env.OnUpsertTypedSearchAttributes(mock.MatchedBy(func(sa temporal.SearchAttributes) bool {
				if v, ok := sa.GetKeyword(searchattr.KubernetesClusterKey); ok {
					upserted = append(upserted, v)
				}
				return true
			})).Return(nil).Maybe()
			env.OnActivity(act.ReadConfig, mock.Anything, mock.Anything).Return(nil, nil)
			env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "cfg"})
			require.True(t, env.IsWorkflowCompleted())
			if setAtStart {
				require.Empty(t, upserted)
			} else {
				require.Equal(t, []string{string(testCluster)}, upserted)
			}
		})
	}
}
