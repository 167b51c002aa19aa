package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// newEnv is a Temporal test environment with the workflows and activities
// registered and the order of started activities recorded.
func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]string) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflows(env)
	RegisterActivities(env, &activities.Activities{})
	var order []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		order = append(order, info.ActivityType.Name)
	})
	return env, &order
}

var switchIn = SwitchInput{
	Pool:  activities.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"},
	Class: v1alpha1.SandboxClassGVisor, From: "old", To: "new", Generation: 3,
}

func liveConfig(name string, deleting bool) *resolve.Config {
	return &resolve.Config{Name: name, Class: v1alpha1.SandboxClassGVisor, Deleting: deleting, Protected: true}
}

func TestSwitchRunsItsActivitiesInOrder(t *testing.T) {
	tests := []struct {
		name      string
		protect   activities.TargetCheck
		live      *resolve.Config
		want      []string
		outcome   string
		eventType string
		note      string
	}{
		{
			name:    "confirmed",
			protect: activities.TargetCheck{OK: true},
			live:    liveConfig("new", false),
			want:    []string{"Protect", "Claim", "ReadConfig", "Confirm", "RecordEvent"},
			outcome: wfapi.OutcomeConfirmed, eventType: "Normal",
			note: `sandbox class "gvisor" switched from SandboxConfig "old" to "new"`,
		},
		{
			name:    "deleted between claim and read: rolled back",
			protect: activities.TargetCheck{OK: true},
			live:    liveConfig("new", true),
			want:    []string{"Protect", "Claim", "ReadConfig", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" is being deleted; keeping "old"`,
		},
		{
			name:    "gone between claim and read: rolled back",
			protect: activities.TargetCheck{OK: true},
			live:    nil,
			want:    []string{"Protect", "Claim", "ReadConfig", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" not found; keeping "old"`,
		},
		{
			name:    "recreated under the same name between protect and read: protected again, confirmed",
			protect: activities.TargetCheck{OK: true},
			live:    &resolve.Config{Name: "new", Class: v1alpha1.SandboxClassGVisor},
			want:    []string{"Protect", "Claim", "ReadConfig", "Protect", "Confirm", "RecordEvent"},
			outcome: wfapi.OutcomeConfirmed, eventType: "Normal",
			note: `sandbox class "gvisor" switched from SandboxConfig "old" to "new"`,
		},
		{
			name:    "refused by the finalizer step: rolled back without a claim",
			protect: activities.TargetCheck{Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "new" is being deleted`},
			want:    []string{"Protect", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" is being deleted; keeping "old"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&tt.protect, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true}, nil)
			env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(tt.live, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true}, nil)
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Message == tt.note && in.Config == "new"
			})).Return(&activities.PoolWrite{Wrote: true}, nil)
			var event activities.EventInput
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.EventInput) error {
				event = in
				return nil
			})

			env.ExecuteWorkflow(wfapi.SwitchWorkflow, switchIn)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res SwitchResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tt.outcome, res.Outcome)
			require.Equal(t, tt.want, *order)
			require.Equal(t, tt.eventType, event.Type)
			require.Equal(t, tt.note, event.Note)
		})
	}
}

func TestSwitchFirstResolutionEventNamesOneConfig(t *testing.T) {
	env, _ := newEnv(t)
	in := switchIn
	in.From = ""
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{}, nil)
	env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(liveConfig("new", false), nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{}, nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.MatchedBy(func(in activities.EventInput) bool {
		return in.Reason == "SandboxConfigSwitched" && in.Note == `sandbox class "gvisor" uses SandboxConfig "new"`
	})).Return(nil).Once()
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}

func TestSwitchRetriesAFailedClaim(t *testing.T) {
	env, order := newEnv(t)
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(nil, errors.New("conflict: the object has been modified")).Twice()
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true}, nil).Once()
	env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(liveConfig("new", false), nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true}, nil).Once()
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(wfapi.SwitchWorkflow, switchIn)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"Protect", "Claim", "Claim", "Claim", "ReadConfig", "Confirm", "RecordEvent"}, *order)
	env.AssertExpectations(t)
}

func TestSwitchWakesTheReleaseOfAConfigInDeletion(t *testing.T) {
	env, order := newEnv(t)
	in := switchIn
	in.FromDeleting = true
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{}, nil)
	env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(liveConfig("new", false), nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{}, nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(act.WakeReleases, mock.Anything, []string{"old"}).Return(nil).Once()
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"Protect", "Claim", "ReadConfig", "Confirm", "RecordEvent", "WakeReleases"}, *order)
	env.AssertExpectations(t)
}

func TestSwitchEndsQuietlyWhenThePoolIsGone(t *testing.T) {
	env, order := newEnv(t)
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{PoolGone: true}, nil)
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, switchIn)
	require.NoError(t, env.GetWorkflowError())
	var res SwitchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, wfapi.OutcomePoolGone, res.Outcome)
	require.Equal(t, []string{"Protect", "Claim"}, *order, "no event for a pool that is gone")
}
