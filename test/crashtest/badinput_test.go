package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// closedBound bounds how long a workflow fed bad input may take to end.
const closedBound = 60 * time.Second

// expectClosed waits for a run to close and checks how: its status, a
// message that says what was wrong, and no failed workflow task on the way.
func expectClosed(t *testing.T, run client.WorkflowRun, want enumspb.WorkflowExecutionStatus, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closedBound)
	defer cancel()
	err := run.Get(ctx, nil)
	c := testenv.Current().Temporal
	d, derr := c.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	require.NoError(t, derr)
	got := d.WorkflowExecutionInfo.Status
	if got == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("workflow %s still running after %s, pending activities: %v", run.GetID(), closedBound, d.PendingActivities)
	}
	require.Equal(t, want, got, "workflow %s: %v", run.GetID(), err)
	if message != "" {
		require.ErrorContains(t, err, message, "workflow %s", run.GetID())
	}
	requireNoFailedTasks(t, run.GetID(), run.GetRunID())
	t.Logf("%s: %s %v", run.GetID(), got, err)
}

// requireNoFailedTasks fails if any workflow task of the run failed.
func requireNoFailedTasks(t *testing.T, id, runID string) {
	t.Helper()
	it := testenv.Current().Temporal.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil && !benignTaskFailures[a.GetCause()] {
			t.Errorf("workflow %s: workflow task failed (event %d): %s: %s", id, ev.GetEventId(), a.GetCause(), a.GetFailure().GetMessage())
		}
	}
}

// TestBadInput: workflows started by hand with bad input, signals with
// wrong payloads or unknown names, and pools that do not exist end in a
// clear error or are ignored: every workflow completes or fails with a
// message saying what was wrong, none runs forever, no workflow task
// fails, and the running pool and release workflows go on working.
func TestBadInput(t *testing.T) {
	t.Parallel() // with the other tests that run no starter, after the rest
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	tc := env.Temporal
	ns := env.Namespace(t)
	prefix := "bi" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	cleanScope(t, prefix, ns)
	tq := testenv.TaskQueue(t)
	newProcess(t, "worker", tq, "").Start()
	starter := starterStandIn{taskQueue: tq}
	start := func(id string, wf string, args ...any) client.WorkflowRun {
		t.Helper()
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: prefix + "/" + id, TaskQueue: tq}, wf, args...)
		require.NoError(t, err)
		return run
	}

	// A real pool, and a config in deletion held by it.
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("held"), false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("spare"), false)))
	require.NoError(t, kube.Create(ctx, newPool(ns, "real", v1alpha1.SandboxClassGVisor, cfg("held"))))
	starter.pool(t, ns, "real")
	waitPool(t, ns, "real", cfg("held"), metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, gvisorConfig(cfg("held"), false)))
	starter.release(t, cfg("held"))
	waitRelease(t, cfg("held"), wfapi.OutcomeWaiting)

	t.Run("a pool that does not exist, re-resolved as an operator does", func(t *testing.T) {
		require.NoError(t, wfapi.Reresolve(ctx, tc, wfapi.ScopeOf(testenv.Current().ClusterName, tq), ns, "never-created", nil))
		expectClosed(t, tc.GetWorkflow(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, "never-created"), ""), enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, "")
	})

	t.Run("release workflows started by hand", func(t *testing.T) {
		expectClosed(t, start("release-empty", wfapi.ReleaseWorkflow, wfapi.ReleaseInput{}),
			enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, "a release workflow needs the SandboxConfig's name")
		expectClosed(t, start("release-not-an-input", wfapi.ReleaseWorkflow, "a string"),
			enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, "")
		startAs := func(id string, in wfapi.ReleaseInput) client.WorkflowRun {
			t.Helper()
			run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, wfapi.ReleaseWorkflow, in)
			require.NoError(t, err)
			return run
		}
		cluster := testenv.Current().ClusterName
		expectClosed(t, startAs(cluster.ReleaseWorkflowID(cfg("no-such-config")), wfapi.ReleaseInput{Config: cfg("no-such-config")}),
			enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, "")
		// A config not in deletion keeps its finalizer.
		expectClosed(t, startAs(cluster.ReleaseWorkflowID(cfg("spare")), wfapi.ReleaseInput{Config: cfg("spare")}),
			enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, "")
		// Under an ID that is not its config's, it does nothing at all.
		expectClosed(t, start("release-someone-elses", wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: cfg("spare")}),
			enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fmt.Sprintf("the release workflow of SandboxConfig %q has the ID <cluster>/sandboxconfig/%s/release", cfg("spare"), cfg("spare")))
		// Another cluster's release, on this cluster's queue: refused by
		// the worker before its first step reads anything.
		expectClosed(t, startAs(wfapi.Cluster("other-cluster").ReleaseWorkflowID(cfg("spare")), wfapi.ReleaseInput{Config: cfg("spare")}),
			enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fmt.Sprintf(`belongs to cluster "other-cluster": the worker of cluster %q refuses its step`, cluster))
	})

	t.Run("switch workflows started by hand", func(t *testing.T) {
		ref := wfapi.PoolRef{Namespace: ns, Name: "real"}
		expectClosed(t, start("switch-empty", wfapi.SwitchWorkflow, wfapi.SwitchInput{}),
			enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, "a switch's workflow ID names its cluster and pool")
		// Under any other ID it does nothing at all.
		expectClosed(t, start("switch-someone-elses", wfapi.SwitchWorkflow, wfapi.SwitchInput{
			Pool: ref, Class: v1alpha1.SandboxClassGVisor, To: cfg("spare"),
		}), enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, "a switch's workflow ID names its cluster and pool")
		// Another cluster's switch of a pool of the same name, on this
		// cluster's queue: refused before its first step, naming both.
		var real v1alpha1.WorkerPool
		require.NoError(t, kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "real"}, &real))
		foreign, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfapi.Cluster("other-cluster").SwitchWorkflowID(ns, "real"), TaskQueue: tq},
			wfapi.SwitchWorkflow, wfapi.SwitchInput{Pool: wfapi.PoolRef{Namespace: ns, Name: "real", UID: string(real.UID)},
				Class: v1alpha1.SandboxClassGVisor, From: cfg("held"), To: cfg("spare"), Generation: real.Generation})
		require.NoError(t, err)
		expectClosed(t, foreign, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
			fmt.Sprintf(`workflow "other-cluster/workerpool/%s/real/switch" belongs to cluster "other-cluster": the worker of cluster %q refuses its step Protect`, ns, testenv.Current().ClusterName))
		// A pool's switch acts on the pool its ID names, whatever its input.
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: testenv.Current().ClusterName.SwitchWorkflowID(ns, "ghost"), TaskQueue: tq},
			wfapi.SwitchWorkflow, wfapi.SwitchInput{Pool: ref, Class: v1alpha1.SandboxClassGVisor, To: cfg("spare")})
		require.NoError(t, err)
		expectClosed(t, run, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fmt.Sprintf("switch workflow of WorkerPool %s/ghost was given WorkerPool %s/real", ns, ns))
	})

	t.Run("signals with wrong payloads and unknown names", func(t *testing.T) {
		switchID := testenv.Current().ClusterName.SwitchWorkflowID(ns, "real")
		releaseID := testenv.Current().ClusterName.ReleaseWorkflowID(cfg("held"))
		var rBefore wfapi.ReleaseState
		v, err := tc.QueryWorkflow(ctx, releaseID, "", wfapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&rBefore))

		for _, payload := range []any{map[string]string{"not": "expected"}, 42, "look again", []int{1, 2}} {
			require.NoError(t, wfapi.Reresolve(ctx, tc, wfapi.ScopeOf(testenv.Current().ClusterName, tq), ns, "real", payload))
			require.NoError(t, tc.SignalWorkflow(ctx, releaseID, "", wfapi.SignalRecheck, payload))
		}
		require.NoError(t, tc.SignalWorkflow(ctx, releaseID, "", "no-such-signal", "x"))
		// A signal for a workflow that does not exist is refused clearly.
		err = tc.SignalWorkflow(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, "never-created-either"), "", wfapi.SignalReresolve, nil)
		var notFound *serviceerror.NotFound
		require.ErrorAs(t, err, &notFound)

		eventually(t, stepBound, "the pool's switch to find nothing to move, and the release to take another look", func() (bool, string) {
			d, err := tc.DescribeWorkflowExecution(ctx, switchID, "")
			if err != nil {
				return false, err.Error()
			}
			var r wfapi.ReleaseState
			v, err := tc.QueryWorkflow(ctx, releaseID, "", wfapi.QueryState)
			if err != nil {
				return false, err.Error()
			}
			if err := v.Get(&r); err != nil {
				return false, err.Error()
			}
			status := d.WorkflowExecutionInfo.Status
			return status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED && r.Checks > rBefore.Checks,
				fmt.Sprintf("latest switch run %s, release checks %d (was %d)", status, r.Checks, rBefore.Checks)
		})
		var last wfapi.SwitchState
		v, err = tc.QueryWorkflow(ctx, switchID, "", wfapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&last))
		require.Equal(t, wfapi.OutcomeUpToDate, last.Outcome)
		// An unknown query is refused clearly.
		_, err = tc.QueryWorkflow(ctx, switchID, "", "no-such-query")
		require.ErrorContains(t, err, "no-such-query")
		d, err := tc.DescribeWorkflowExecution(ctx, releaseID, "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status, releaseID)
		for _, id := range []string{switchID, releaseID} {
			requireNoFailedTasks(t, id, "")
		}
		// They still work: the pool moves and the held config goes.
		require.NoError(t, patchPool(ctx, kube, ns, "real", pin(cfg("spare"))))
		starter.pool(t, ns, "real")
		waitPool(t, ns, "real", cfg("spare"), metav1.ConditionTrue)
		waitReleased(t, cfg("held"))
	})
}
