package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

var leanIn = SwitchInput{
	Lean: true, Pool: activities.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"},
	Class: v1alpha1.SandboxClassGVisor, From: "old", To: "new", Generation: 3, PoolResourceVersion: "7",
}

// runLean runs a lean switch under the pool's switch ID.
func runLean(t *testing.T, env *testsuite.TestWorkflowEnvironment, in SwitchInput) (*SwitchResult, error) {
	t.Helper()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: wfapi.PoolSwitchWorkflowID("ns", "pool")})
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res SwitchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return &res, nil
}

func TestLeanSwitch(t *testing.T) {
	tests := []struct {
		name    string
		claim   activities.PoolWrite
		live    *resolve.Config
		rolled  activities.PoolWrite
		want    []string
		outcome string
		event   string
	}{
		{
			name:    "confirmed: only the claim is a regular activity",
			claim:   activities.PoolWrite{Wrote: true, ResourceVersion: "8"},
			live:    liveConfig("new", false),
			want:    []string{local("Protect"), "Claim", local("ReadConfig"), local("Confirm"), local("RecordEvent")},
			outcome: wfapi.OutcomeConfirmed, event: "SandboxConfigSwitched",
		},
		{
			name:    "deleted between claim and read: rolled back",
			claim:   activities.PoolWrite{Wrote: true, ResourceVersion: "8"},
			live:    liveConfig("new", true),
			rolled:  activities.PoolWrite{Wrote: true},
			want:    []string{local("Protect"), "Claim", local("ReadConfig"), local("RollBack"), local("RecordEvent")},
			outcome: wfapi.OutcomeRolledBack, event: v1alpha1.ReasonSandboxConfigDeleting,
		},
		{
			name:    "a re-run of the task finds its earlier confirm: the move stands and is reported",
			claim:   activities.PoolWrite{Wrote: true, ResourceVersion: "8"},
			live:    liveConfig("new", true),
			rolled:  activities.PoolWrite{Landed: true},
			want:    []string{local("Protect"), "Claim", local("ReadConfig"), local("RollBack"), local("RecordEvent")},
			outcome: wfapi.OutcomeConfirmed, event: "SandboxConfigSwitched",
		},
		{
			name:    "superseded: the class moved since the starter looked; nothing else is done",
			claim:   activities.PoolWrite{Superseded: true},
			want:    []string{local("Protect"), "Claim"},
			outcome: wfapi.OutcomeSuperseded,
		},
		{
			name:    "the pool is gone",
			claim:   activities.PoolWrite{PoolGone: true},
			want:    []string{local("Protect"), "Claim"},
			outcome: wfapi.OutcomePoolGone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool {
				return in.ExpectFrom && in.From == "old" && in.ResourceVersion == "7"
			})).Return(&tt.claim, nil)
			env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(tt.live, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Local && in.Claimed && in.ResourceVersion == "8"
			})).Return(&activities.PoolWrite{Wrote: true}, nil)
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Local && in.Claimed
			})).Return(&tt.rolled, nil)
			var event activities.EventInput
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.EventInput) error {
				event = in
				return nil
			})

			res, err := runLean(t, env, leanIn)
			require.NoError(t, err)
			require.Equal(t, tt.want, *order)
			require.Equal(t, tt.outcome, res.Outcome)
			require.Equal(t, tt.event, event.Reason)
		})
	}
}

// An operator's re-resolution starts a switch with no input: it decides on
// a live read, recorded by a regular Observe, and ends when nothing moves.
func TestLeanSwitchStartedByAnOperator(t *testing.T) {
	t.Run("up to date", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Observe, mock.Anything, activities.PoolRef{Namespace: "ns", Name: "pool"}).Return(&activities.Observation{
			Exists: true, UID: "uid-1", Generation: 3,
			Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
			Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "def"}}}},
			Configs: []resolve.Config{{Name: "def", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}},
		}, nil)
		res, err := runLean(t, env, SwitchInput{})
		require.NoError(t, err)
		require.Equal(t, []string{"Observe"}, *order)
		require.Equal(t, wfapi.OutcomeUpToDate, res.Outcome)
	})
	t.Run("a move to make", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{
			Exists: true, UID: "uid-1", Generation: 3, ResourceVersion: "7",
			Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
			Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"}}}},
			Configs: []resolve.Config{{Name: "new", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}, {Name: "old", Class: v1alpha1.SandboxClassGVisor}},
		}, nil)
		env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
		env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool {
			return in.ExpectFrom && in.From == "old" && in.Config == "new" && in.Pool.UID == "uid-1"
		})).Return(&activities.PoolWrite{Wrote: true, ResourceVersion: "8"}, nil)
		env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(liveConfig("new", false), nil)
		env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true}, nil)
		env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
		res, err := runLean(t, env, SwitchInput{})
		require.NoError(t, err)
		require.Equal(t, []string{"Observe", local("Protect"), "Claim", local("ReadConfig"), local("Confirm"), local("RecordEvent")}, *order)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
	})
}

// A switch acts on the pool its ID names, whatever its input says.
func TestLeanSwitchActsOnlyOnThePoolItsIDNames(t *testing.T) {
	env, order := newSwitchEnv(t)
	in := leanIn
	in.Pool.Name = "other"
	_, err := runLean(t, env, in)
	require.ErrorContains(t, err, "switch workflow of WorkerPool ns/pool was given WorkerPool ns/other")
	require.Empty(t, *order)
}
