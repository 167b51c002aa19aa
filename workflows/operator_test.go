package workflows

import (
	"context"
	"fmt"
	"go.temporal.io/sdk/client"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// runOperator runs the operator workflow until it continues as new (after
// perRun requests), sending signals at one minute, and returns the next
// run's input and the requests the activities got.
func runOperator(t *testing.T, perRun int, in wfapi.OperatorInput, signals func(env *testsuite.TestWorkflowEnvironment)) (wfapi.OperatorInput, []wfapi.OperatorRequest) {
	t.Helper()
	defer func(was int) { operatorRequestsPerRun = was }(operatorRequestsPerRun)
	operatorRequestsPerRun = perRun
	env, _, _ := newTestEnv(t)
	var got []wfapi.OperatorRequest
	done := func(_ context.Context, req wfapi.OperatorRequest) (wfapi.OperatorResult, error) {
		got = append(got, req)
		return wfapi.OperatorResult{Matched: 1, Signalled: 1, Workflows: []string{"w/" + req.String()}}, nil
	}
	env.OnActivity(act.OperatorReresolve, mock.Anything, mock.Anything).Return(done)
	env.OnActivity(act.OperatorRecheck, mock.Anything, mock.Anything).Return(done)
	env.RegisterDelayedCallback(func() { signals(env) }, time.Minute)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.OperatorWorkflowID()})
	env.ExecuteWorkflow(Operator, in)
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	require.Equal(t, wfapi.OperatorWorkflow, can.WorkflowType.Name)
	var next wfapi.OperatorInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	return next, got
}

// TestOperatorIgnoresBadInput: malformed, empty, non-JSON and unknown
// inputs are recorded as rejected and change nothing; the good request
// after them is carried out.
func TestOperatorIgnoresBadInput(t *testing.T) {
	next, got := runOperator(t, 1, wfapi.OperatorInput{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SignalWorkflow(wfapi.SignalReresolve, nil)
		env.SignalWorkflow(wfapi.SignalReresolve, 42)
		env.SignalWorkflow(wfapi.SignalReresolve, []byte{0xff, 0x00})
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"namspace": "ate-demo"})
		env.SignalWorkflow(wfapi.SignalRecheck, "Not_A_Config")
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"class": "gvisor", "by": "alice"})
	})
	want := wfapi.OperatorRequest{Seq: 6, Signal: wfapi.SignalReresolve, Class: "gvisor", By: "alice"}
	require.Equal(t, []wfapi.OperatorRequest{want}, got)
	require.Equal(t, 6, next.Received)
	require.Empty(t, next.Pending)
	require.Len(t, next.Recent, 6)
	for i, r := range next.Recent[:5] {
		require.Equal(t, i+1, r.Seq)
		require.NotEmpty(t, r.Rejected, "%+v", r)
		require.Nil(t, r.Result)
	}
	require.Contains(t, next.Recent[0].Rejected, "no input")
	require.Equal(t, "42", next.Recent[1].Input)
	require.Contains(t, next.Recent[2].Rejected, `"binary/plain", not JSON`)
	require.Contains(t, next.Recent[3].Rejected, "unknown field")
	require.Contains(t, next.Recent[4].Rejected, "not a DNS subdomain")
	require.Equal(t, &want, next.Recent[5].Request)
	require.Equal(t, 1, next.Recent[5].Result.Signalled)
}

// TestOperatorLosesNoSignalAcrossContinueAsNew: signals delivered while a
// run ends are drained into the next run's input, and that run carries them
// out in order, numbered on from where the last one stopped.
func TestOperatorLosesNoSignalAcrossContinueAsNew(t *testing.T) {
	next, got := runOperator(t, 1, wfapi.OperatorInput{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SignalWorkflow(wfapi.SignalReresolve, "ate-demo/counter")
		env.SignalWorkflow(wfapi.SignalReresolve, "ate-demo/*")
		env.SignalWorkflow(wfapi.SignalRecheck, "gvisor-default")
	})
	require.Equal(t, 3, next.Received)
	require.Len(t, got, 1)
	all := append(append([]wfapi.OperatorRequest(nil), got...), next.Pending...)
	require.Equal(t, []wfapi.OperatorRequest{
		{Seq: 1, Signal: wfapi.SignalReresolve, Pool: "ate-demo/counter"},
		{Seq: 2, Signal: wfapi.SignalReresolve, Namespace: "ate-demo"},
		{Seq: 3, Signal: wfapi.SignalRecheck, Config: "gvisor-default"},
	}, all, "every signal either carried out or carried over")

	// The next run carries out what it was handed before anything new.
	last, got := runOperator(t, 3, next, func(env *testsuite.TestWorkflowEnvironment) {
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"namespace": "other"})
	})
	require.Equal(t, append(next.Pending, wfapi.OperatorRequest{Seq: 4, Signal: wfapi.SignalReresolve, Namespace: "other"}), got)
	require.Equal(t, 4, last.Received)
	require.Empty(t, last.Pending)
	require.Len(t, last.Recent, 4)
}

// TestOperatorMergesIdenticalRequestsAndBoundsItsQueue: a request identical
// to one still waiting merges into it (counted, not queued); one identical
// to the request under way waits, as that one may have looked already; a
// request beyond a full queue is rejected and counted; a note is cut short.
// What the next run is handed stays bounded however many signals came.
func TestOperatorMergesIdenticalRequestsAndBoundsItsQueue(t *testing.T) {
	defer func(was int) { operatorPendingMax = was }(operatorPendingMax)
	operatorPendingMax = 3
	long := strings.Repeat("n", 5000)
	next, got := runOperator(t, 3, wfapi.OperatorInput{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"pool": "ns/a", "by": "first"})
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"pool": "ns/a", "by": long})
		env.SignalWorkflow(wfapi.SignalReresolve, map[string]string{"pool": "ns/a", "by": "third"})
		env.SignalWorkflow(wfapi.SignalReresolve, "ns/b")
		env.SignalWorkflow(wfapi.SignalReresolve, "ns/c")
		env.SignalWorkflow(wfapi.SignalRecheck, "gvisor-default")
	})
	require.Equal(t, []wfapi.OperatorRequest{
		{Seq: 1, Signal: wfapi.SignalReresolve, Pool: "ns/a", By: "first"},
		{Seq: 2, Signal: wfapi.SignalReresolve, Pool: "ns/a", By: wfapi.Truncate(long, operatorInputKept), Repeats: 1},
		{Seq: 4, Signal: wfapi.SignalReresolve, Pool: "ns/b"},
	}, got)
	require.Equal(t, 6, next.Received)
	require.Equal(t, 2, next.Rejected)
	require.Empty(t, next.Pending)
	var rejected []int
	for _, r := range next.Recent {
		if r.Rejected != "" {
			rejected = append(rejected, r.Seq)
			require.Contains(t, r.Rejected, "3 requests wait already")
		}
		if r.Result != nil {
			require.Len(t, r.Result.Workflows, 1)
		}
	}
	require.Equal(t, []int{5, 6}, rejected)
}

// TestOperatorRecordsKeepFewWorkflowIDs: the `state` query's records, which
// cross continue-as-new, keep the first few workflow IDs a request
// signalled; the activity's result in the history keeps them all.
func TestOperatorRecordsKeepFewWorkflowIDs(t *testing.T) {
	defer func(was int) { operatorRequestsPerRun = was }(operatorRequestsPerRun)
	operatorRequestsPerRun = 1
	env, _, _ := newTestEnv(t)
	ids := make([]string, wfapi.MaxRecordedWorkflows)
	for i := range ids {
		ids[i] = fmt.Sprintf("c/workerpool/ns/pool-%d/switch", i)
	}
	env.OnActivity(act.OperatorReresolve, mock.Anything, mock.Anything).Return(
		wfapi.OperatorResult{Matched: len(ids), Signalled: len(ids), Workflows: ids}, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, "ns/*") }, time.Minute)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.OperatorWorkflowID()})
	env.ExecuteWorkflow(Operator, wfapi.OperatorInput{})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next wfapi.OperatorInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.Recent, 1)
	require.Equal(t, len(ids), next.Recent[0].Result.Signalled)
	require.Equal(t, ids[:operatorRecentWorkflows], next.Recent[0].Result.Workflows)
}
