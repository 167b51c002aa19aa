package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestASwitchYieldsBeforeItsClaim: a `reresolve` received while the first
// Protect keeps failing (an admission policy refusing the finalizer) cancels
// the step and continues the switch as new with no input, so the next run
// plans what the pool then asks for; nothing is claimed. Without a signal
// the switch waits for the step.
func TestASwitchYieldsBeforeItsClaim(t *testing.T) {
	refused := errors.New(`adding finalizer to SandboxConfig "new": protection refused by the test policy`)
	t.Run("yields", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(nil, refused)
		env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool { return in.OnlyOwn })).
			Return(&activities.PoolWrite{Outcome: activities.Unclaimed}, nil).Once()
		// Past the step's local retries: the signal cancels its regular run.
		// (The test environment gives a regular activity 10 attempts, about
		// 80 s of backoff; the server, as many as it takes.)
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(wfapi.SignalReresolve, nil)
		}, 30*time.Second)
		_, err := runSwitch(t, env, switchIn)
		var can *workflow.ContinueAsNewError
		require.ErrorAs(t, err, &can)
		require.Equal(t, wfapi.SwitchWorkflow, can.WorkflowType.Name)
		var next wfapi.SwitchInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
		require.Equal(t, wfapi.SwitchInput{}, next, "the next run decides on its own live read")
		require.Greater(t, len(*order), 5, "Protect was retried until the signal")
		steps := *order
		for _, a := range steps[:len(steps)-1] {
			require.Contains(t, []string{local("Protect"), "Protect"}, a, "nothing but Protect ran before the signal")
		}
		require.Contains(t, steps, "Protect", "the step, still failing after its local retries, was handed to the server")
		require.Equal(t, local("Claim"), steps[len(steps)-1], "then a Claim that only looks, and finds nothing of the run: no claim")
		env.AssertExpectations(t)
	})
	t.Run("no signal: the step is waited for", func(t *testing.T) {
		env, _ := newSwitchEnv(t)
		env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: false, Reason: v1alpha1.ReasonSandboxConfigNotFound}, nil)
		env.OnActivity(act.RollBack, mock.Anything, mock.Anything).Return(rolledBackNow(), nil)
		env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
		res, err := runSwitch(t, env, switchIn)
		require.NoError(t, err)
		require.Equal(t, wfapi.OutcomeRolledBack, res.Outcome)
	})
}
