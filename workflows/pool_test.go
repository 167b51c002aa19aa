package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

var poolIn = wfapi.PoolInput{Namespace: "ns", Name: "pool"}

// settled is a pool on "gvisor-default", with status saying exactly what
// resolution says: a pass over it has nothing to write.
func settled() *activities.Observation {
	spec := []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}}
	classes := []v1alpha1.WorkerPoolSandboxClassStatus{{
		Name:      v1alpha1.SandboxClassGVisor,
		ConfigRef: &v1alpha1.SandboxConfigReference{Name: "gvisor-default"},
		Conditions: []metav1.Condition{poolstatus.ClassCondition(true, "Resolved",
			`resolved to SandboxConfig "gvisor-default"`, 1)},
	}}
	return &activities.Observation{
		Exists: true, UID: "uid-1", Generation: 1, Spec: spec,
		Status: v1alpha1.WorkerPoolStatus{
			ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, Selector: "ate.dev/worker-pool=pool",
			SandboxClasses: classes,
			Conditions:     []metav1.Condition{poolstatus.Summary(spec, classes, 1)},
		},
		Configs:    []resolve.Config{{Name: "gvisor-default", Class: "gvisor", ClassDefault: true, Protected: true, CreatedUnix: 10}},
		Deployment: &activities.DeploymentState{Replicas: 2, ReadyReplicas: 2, Selector: "ate.dev/worker-pool=pool"},
	}
}

func TestPoolCoalescesASignalStormIntoOnePass(t *testing.T) {
	env, order := newEnv(t)
	legacyPool(env)
	observations := 0
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.PoolRef) (*activities.Observation, error) {
		observations++
		if observations == 3 {
			return &activities.Observation{}, nil // the pool is gone
		}
		return settled(), nil
	})
	env.OnActivity(act.ApplyDeployment, mock.Anything, mock.Anything).Return(
		&activities.DeploymentResult{Deployment: settled().Deployment}, nil)
	env.RegisterDelayedCallback(func() {
		for range 50 {
			env.SignalWorkflow(wfapi.SignalReresolve, nil)
		}
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, "a malformed payload is ignored") }, 2*time.Minute)

	env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 3, observations, "the start, one pass for 50 signals, one for the last")
	require.NotContains(t, *order, "SyncStatus", "nothing changed, so nothing is written")
}

func TestPoolSwitchesToANewDefaultThenWritesNothingMore(t *testing.T) {
	env, _ := newEnv(t)
	legacyPool(env)
	obs := settled()
	obs.Configs = append(obs.Configs, resolve.Config{Name: "gvisor-default-v2", Class: "gvisor", ClassDefault: true, Protected: true, CreatedUnix: 20})
	observations := 0
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(func(context.Context, activities.PoolRef) (*activities.Observation, error) {
		observations++
		if observations > 1 {
			return &activities.Observation{}, nil
		}
		return obs, nil
	})
	var switched SwitchInput
	env.OnWorkflow(wfapi.SwitchWorkflow, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in SwitchInput) (*SwitchResult, error) {
		switched = in
		return &SwitchResult{Outcome: wfapi.OutcomeConfirmed, Reason: "Resolved"}, nil
	})
	env.OnActivity(act.ApplyDeployment, mock.Anything, mock.Anything).Return(
		&activities.DeploymentResult{Deployment: obs.Deployment}, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, time.Minute)

	env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "gvisor-default", switched.From)
	require.Equal(t, "gvisor-default-v2", switched.To)
	require.Equal(t, "uid-1", switched.Pool.UID)
}

func TestPoolGatesANewDeploymentOnResolution(t *testing.T) {
	env, order := newEnv(t)
	legacyPool(env)
	obs := settled()
	obs.Status = v1alpha1.WorkerPoolStatus{}
	obs.Deployment = nil
	obs.Configs = nil // no default: DefaultConfigNotFound
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(obs, nil).Once()
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{}, nil)
	var sync activities.SyncInput
	env.OnActivity(act.SyncStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SyncInput) (*activities.PoolWrite, error) {
		sync = in
		return &activities.PoolWrite{Wrote: true}, nil
	})
	var warning activities.EventInput
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.EventInput) error {
		warning = in
		return nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, time.Minute)

	env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
	require.NoError(t, env.GetWorkflowError())
	require.NotContains(t, *order, "ApplyDeployment", "a new unresolved pool gets no Deployment")
	require.Len(t, sync.Classes, 1)
	require.Equal(t, v1alpha1.ReasonDefaultConfigNotFound, sync.Classes[0].Reason)
	require.Equal(t, "Warning", warning.Type)
	require.Equal(t, v1alpha1.ReasonDefaultConfigNotFound, warning.Reason)
	require.Equal(t, []string{"SyncStatus", "RecordEvent"}, *order, "the event follows the write it reports (Observe is a local activity)")
}

// TestPoolObservesUntilTheAPIServerAnswers: an Observe that fails for
// minutes (an API server outage) is retried until it answers; the pass is
// not abandoned to wait for a wake-up that may never come.
func TestPoolObservesUntilTheAPIServerAnswers(t *testing.T) {
	env, _ := newEnv(t)
	legacyPool(env)
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(nil, errors.New("the API server is unavailable")).Times(12)
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{Exists: false}, nil).Once()

	env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the pass saw the pool gone and the workflow ended")
	env.AssertExpectations(t)
}

func TestPoolRejectsAnEmptyName(t *testing.T) {
	env, _ := newEnv(t)
	legacyPool(env)
	env.ExecuteWorkflow(wfapi.PoolWorkflow, wfapi.PoolInput{})
	require.ErrorContains(t, env.GetWorkflowError(), "needs the pool's namespace and name")
}

func TestPoolAppliesTheDeploymentOnlyWhenItIsNotAsWanted(t *testing.T) {
	tests := []struct {
		name      string
		observe   func(*activities.Observation)
		wantApply bool
	}{
		{name: "as wanted: nothing to apply", observe: func(o *activities.Observation) { o.DeploymentUpToDate = true }},
		{
			// Also what observations recorded before DeploymentUpToDate
			// existed say: they applied, and their replay must too.
			name:      "not as wanted",
			observe:   func(o *activities.Observation) { o.DeploymentUpToDate = false },
			wantApply: true,
		},
		{name: "none yet", observe: func(o *activities.Observation) { o.Deployment = nil }, wantApply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newEnv(t)
			legacyPool(env)
			legacyPool(env)
			obs := settled()
			tt.observe(obs)
			env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(obs, nil).Once()
			env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{}, nil)
			env.OnActivity(act.ApplyDeployment, mock.Anything, mock.Anything).Return(
				&activities.DeploymentResult{Deployment: settled().Deployment}, nil)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, time.Minute)

			env.ExecuteWorkflow(wfapi.PoolWorkflow, poolIn)
			require.NoError(t, env.GetWorkflowError())
			if tt.wantApply {
				require.Equal(t, []string{"ApplyDeployment"}, *order)
			} else {
				require.Empty(t, *order, "a settled pool with its Deployment as wanted costs no activity")
			}
		})
	}
}

// legacyPool runs a pool workflow as it ran before the lean switch retired
// pool workflows: what executions recorded then replay.
func legacyPool(env *testsuite.TestWorkflowEnvironment) {
	env.OnGetVersion("retired-by-lean-switch", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
}

// A pool workflow woken on code with the lean switch ends: the starter
// starts each switch itself.
func TestPoolWorkflowRetires(t *testing.T) {
	env, order := newEnv(t)
	env.ExecuteWorkflow(wfapi.PoolWorkflow, wfapi.PoolInput{Namespace: "ns", Name: "pool"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, *order, "a retired pool workflow acts on nothing")
}
