package workflows

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestSwitchWritesOnTheVersionsItKnows: the claim gets the pool's version
// the pass observed, the confirm or roll back the one the claim returned,
// so that neither reads the pool first (see activities.updateStatus).
func TestSwitchWritesOnTheVersionsItKnows(t *testing.T) {
	tests := []struct {
		name              string
		observed, claimed string
		live              *resolve.Config
		settle            string
	}{
		{name: "confirmed", observed: "41", claimed: "42", live: liveConfig("new", false), settle: "Confirm"},
		{name: "rolled back", observed: "41", claimed: "42", live: liveConfig("new", true), settle: "RollBack"},
		// A switch started before the pass passed a version, or whose
		// claim ran before it returned one.
		{name: "no versions", live: liveConfig("new", false), settle: "Confirm"},
	}
	for _, tt := range tests {
		for _, v := range switchVersions {
			t.Run(fmt.Sprintf("%s/version %d", tt.name, v), func(t *testing.T) {
				env, order := newSwitchEnv(t)
				want := atVersion(env, v, "Protect", "Claim", "ReadConfig", tt.settle, "RecordEvent")
				in := switchIn
				in.PoolResourceVersion = tt.observed
				env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
				env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(c activities.ClaimInput) bool {
					return c.ResourceVersion == tt.observed
				})).Return(&activities.PoolWrite{Wrote: true, ResourceVersion: tt.claimed}, nil).Once()
				env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(tt.live, nil)
				onClaimed := mock.MatchedBy(func(s activities.SettleInput) bool { return s.ResourceVersion == tt.claimed })
				env.OnActivity(act.Confirm, mock.Anything, onClaimed).Return(&activities.PoolWrite{Wrote: true}, nil).Maybe()
				env.OnActivity(act.RollBack, mock.Anything, onClaimed).Return(&activities.PoolWrite{Wrote: true}, nil).Maybe()
				env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)

				executeSwitch(env, in)
				require.NoError(t, env.GetWorkflowError())
				require.Equal(t, want, *order)
				env.AssertExpectations(t)
			})
		}
	}
}

// TestPoolPassesTheObservedVersionToItsSwitch: the observed version holds
// for the pass's first write, its switch's claim.
func TestPoolPassesTheObservedVersionToItsSwitch(t *testing.T) {
	env, _ := newEnv(t)
	legacyPool(env)
	obs := settled()
	obs.ResourceVersion = "41"
	obs.Configs = append(obs.Configs, resolve.Config{Name: "gvisor-default-v2", Class: "gvisor", ClassDefault: true, Protected: true, CreatedUnix: 20})
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(obs, nil).Once()
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{}, nil)
	var switched SwitchInput
	env.OnWorkflow(wfapi.SwitchWorkflow, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in SwitchInput) (*SwitchResult, error) {
		switched = in
		return &SwitchResult{Outcome: wfapi.OutcomeConfirmed, Reason: "Resolved"}, nil
	})
	env.OnActivity(act.ApplyDeployment, mock.Anything, mock.Anything).Return(&activities.DeploymentResult{Deployment: obs.Deployment}, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, time.Minute)

	env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "41", switched.PoolResourceVersion)
}
