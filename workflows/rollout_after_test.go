package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// afterLook is what a look answers: a verdict and what it read of the
// other clusters.
type afterLook struct {
	verdict rollout.Verdict
	after   []rollout.ClusterRollout
}

// afterEnv runs the rollout of "new" whose looks answer in turn (the last
// again once they run out), each with the status the run's last write
// left, as the API server would; it records the status writes and the
// AwaitClusters calls, which return after wait (0: at once).
func afterEnv(t *testing.T, wait time.Duration, looks ...afterLook) (*testsuite.TestWorkflowEnvironment, *[]activities.RolloutStatusInput, *[]activities.AwaitClustersInput) {
	t.Helper()
	env, _ := newEnv(t)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.RolloutWorkflowID("new")})
	var status v1alpha1.RolloutStatus
	n := 0
	env.OnActivity(act.LookAtRollout, mock.Anything, mock.Anything).Return(func(context.Context, activities.LookInput) (*activities.RolloutLook, error) {
		l := looks[min(n, len(looks)-1)]
		n++
		return &activities.RolloutLook{Exists: true, Generation: 1, Deadline: time.Hour, Verdict: l.verdict, After: l.after, Status: status}, nil
	})
	writes := &[]activities.RolloutStatusInput{}
	env.OnActivity(act.SetRolloutStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RolloutStatusInput) error {
		*writes = append(*writes, in)
		if in.Phase != "" {
			status.Phase, status.Message, status.AwaitingClusters = in.Phase, in.Message, in.AwaitingClusters
		}
		return nil
	})
	env.OnActivity(act.RecordRolloutEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).Return(&activities.Admitted{Gone: true}, nil)
	waits := &[]activities.AwaitClustersInput{}
	env.OnActivity(act.AwaitClusters, mock.Anything, mock.Anything).After(wait).Return(func(_ context.Context, in activities.AwaitClustersInput) (string, error) {
		*waits = append(*waits, in)
		return activities.AwaitChanged, nil
	})
	return env, writes, waits
}

var (
	stagingRunning = []rollout.ClusterRollout{{Cluster: "staging", Workflow: rollout.WorkflowRunning, Phase: v1alpha1.RolloutProgressing, Step: 1}}
	awaitStaging   = rollout.Verdict{Action: rollout.Hold, Phase: v1alpha1.RolloutAwaitingClusters, UID: "uid-1",
		Message:  `waiting before step 1 for the rollout of SandboxConfig "new" to complete in 1 of the 1 clusters of spec.rollout.after: staging`,
		Awaiting: []v1alpha1.RolloutAwaitedCluster{{Cluster: "staging", Phase: "Progressing", Message: "in progress there"}}}
)

// TestRolloutAwaitsClusters: held on AwaitingClusters, the run writes the
// hold once (a look that finds it written writes nothing), waits with
// AwaitClusters given what its look read, looks again when it returns, and
// takes step 1 once the planner lets it.
func TestRolloutAwaitsClusters(t *testing.T) {
	env, writes, waits := afterEnv(t, 0,
		afterLook{awaitStaging, stagingRunning}, afterLook{awaitStaging, stagingRunning},
		afterLook{verdict: takeStep1}, afterLook{verdict: stopped})
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	var held []activities.RolloutStatusInput
	for _, w := range *writes {
		if w.Phase == v1alpha1.RolloutAwaitingClusters {
			held = append(held, w)
		}
	}
	require.Len(t, held, 1, "the hold written once, not at every look: %+v", *writes)
	require.Equal(t, awaitStaging.Awaiting, held[0].AwaitingClusters)
	require.Equal(t, awaitStaging.Message, held[0].Message)
	require.Equal(t, []activities.AwaitClustersInput{{Config: "new", Seen: stagingRunning}, {Config: "new", Seen: stagingRunning}}, *waits,
		"a wait per look that held, given what the look read")
	require.Equal(t, v1alpha1.RolloutStopped, phases(*writes)[len(phases(*writes))-1])
}

// TestRolloutAwaitingClustersHearsASignal: a recheck while AwaitClusters
// waits (an hour here) looks at once; the wait does not hold the run.
func TestRolloutAwaitingClustersHearsASignal(t *testing.T) {
	env, _, _ := afterEnv(t, time.Hour, afterLook{awaitStaging, stagingRunning}, afterLook{verdict: stopped})
	var start time.Time
	env.RegisterDelayedCallback(func() { start = env.Now() }, 0)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, time.Minute)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res wfapi.RolloutResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, string(v1alpha1.RolloutStopped), res.Phase)
	require.Less(t, env.Now().Sub(start), time.Hour, "ended by the recheck, not by the wait")
}

// TestRolloutRefusedAfterWaitsForTheSpec: a refusal (the cluster lists
// itself) reads nothing: the run waits for a signal, not AwaitClusters.
func TestRolloutRefusedAfterWaitsForTheSpec(t *testing.T) {
	refused := awaitStaging
	refused.Message = `refused: spec.rollout.after.clusters lists this cluster, "test", itself`
	env, writes, waits := afterEnv(t, 0, afterLook{verdict: refused}, afterLook{verdict: stopped})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, time.Minute)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, *waits)
	require.Equal(t, []v1alpha1.RolloutPhase{v1alpha1.RolloutAwaitingClusters, v1alpha1.RolloutStopped}, phases(*writes))
}
