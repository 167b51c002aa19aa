package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// The floor's no-op activities must be callable where the product's are:
// same names, same signatures (a local activity gets its arguments as Go
// values).
func TestNoopActivitiesMatchTheProducts(t *testing.T) {
	noop, real := reflect.TypeOf(&noopActivities{}), reflect.TypeOf(&activities.Activities{})
	for i := range noop.NumMethod() {
		m := noop.Method(i)
		r, ok := real.MethodByName(m.Name)
		require.True(t, ok, "*activities.Activities has no %s", m.Name)
		// Receivers differ; compare the rest.
		require.Equal(t, signature(r.Type), signature(m.Type), m.Name)
	}
}

func signature(f reflect.Type) (out []reflect.Type) {
	for i := 1; i < f.NumIn(); i++ {
		out = append(out, f.In(i))
	}
	out = append(out, nil)
	for i := range f.NumOut() {
		out = append(out, f.Out(i))
	}
	return out
}

// The real Switch, on the no-op activities, takes the happy path: it
// confirms and records its event, as the product's switches in the bench do.
func TestFloorSwitchConfirms(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The no-op local activities run inside the workflow task here: on a
	// loaded machine (make test runs packages side by side) one can take
	// over the SDK's 1 s deadlock detection, which is about workflow code
	// that never yields, not about a slow machine.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	workflows.RegisterWorkflows(env)
	acts := &noopActivities{}
	events := newTracker(1)
	acts.events.Store(events)
	env.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
	in := floorMove("floor1-", 3)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: benchCluster.SwitchWorkflowID(in.Pool.Namespace, in.Pool.Name)})
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res wfapi.SwitchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
	require.Len(t, events.seen, 1, "RecordEvent ran")
}
