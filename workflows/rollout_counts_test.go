package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestAHeldRolloutKeepsItsCounts: a rollout held (here aborted) keeps its
// counts current with KeepRolloutCounts, for its incarnation, while it
// waits for a look; started again when it returns at its bound, not when
// the config is gone. The abort's pools go back while it holds.
func TestAHeldRolloutKeepsItsCounts(t *testing.T) {
	aborted := rollout.Verdict{Action: rollout.Hold, Phase: v1alpha1.RolloutAborted, Message: "aborted", UID: "uid-1"}
	var kept []activities.KeepCountsInput
	env, writes := rolloutEnvKeeping(t, &[]string{}, func(in activities.KeepCountsInput) string {
		kept = append(kept, in)
		if len(kept) < 3 {
			return activities.CountsBound
		}
		return activities.CountsGone
	}, aborted, stopped)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, 5*time.Hour)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.RolloutPhase{v1alpha1.RolloutAborted, v1alpha1.RolloutStopped}, phases(*writes))
	want := activities.KeepCountsInput{Config: "new", UID: "uid-1"}
	require.Equal(t, []activities.KeepCountsInput{want, want, want}, kept,
		"kept through the hold: started again twice at its bound, not after the config was gone")
}

// TestABakeKeepsItsCounts: a step's bake keeps the counts current too, and
// nothing keeps them once the rollout completed.
func TestABakeKeepsItsCounts(t *testing.T) {
	var kept int
	env, writes := rolloutEnvKeeping(t, &[]string{}, func(activities.KeepCountsInput) string {
		kept++
		return activities.CountsGone
	}, takeStep1, complete)
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Admitted: 1, Total: 4, Pause: 10 * time.Minute, Class: "gvisor"}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).Return(&activities.StepWait{Outcome: activities.StepReady}, nil)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.RolloutPhase{v1alpha1.RolloutBaking, v1alpha1.RolloutCompleted}, phases(*writes))
	require.Equal(t, 1, kept, "kept once, through the bake")
}
