//go:build record

package replay

// The product, run in this process against the recorder's servers (see
// internal/producttest), and the helpers that export its histories.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// product is the product under recording.
type product struct{ *producttest.Product }

// startProduct runs the worker and the starter against the package's
// kube-apiserver and the given Temporal server until the test ends, then
// empties the cluster: SandboxConfigs are cluster-scoped, and one
// scenario's class default would move another's pools.
// recordedCluster is the cluster the recorded histories' workflows belong
// to: a name, so that the fixtures' IDs read the same on every recording.
const recordedCluster = wfapi.Cluster("recorded")

func startProduct(t *testing.T, temporal tclient.Client, interceptors ...interceptor.WorkerInterceptor) *product {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	return &product{(&producttest.Product{
		Env: env, ClusterName: recordedCluster, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: temporal, Interceptors: interceptors,
	}).Run(t)}
}

// describe returns the run ID and status of a workflow's run (the current
// run when runID is empty).
func (p *product) describe(t *testing.T, id, runID string) (string, enumspb.WorkflowExecutionStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, runID)
	require.NoError(t, err, "describing %s", id)
	info := resp.GetWorkflowExecutionInfo()
	return info.GetExecution().GetRunId(), info.GetStatus()
}

// history fetches the whole history of one run, as GetWorkflowHistory pages it.
func (p *product) history(t *testing.T, id, runID string) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := p.TemporalClient().GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err, "reading the history of %s", id)
		h.Events = append(h.Events, e)
	}
	return h
}

// nextRun waits for a run of a workflow other than after to be its current
// one, and returns its run ID: the next switch of a pool, under the pool's
// switch ID.
func (p *product) nextRun(t *testing.T, id, after string) string {
	t.Helper()
	run := ""
	producttest.Eventually(t, id+" to start a run after "+after, func() (bool, string) {
		run, _ = p.describe(t, id, "")
		return run != after, "current run " + run
	})
	return run
}

// closedRun waits for a run of a workflow (the current one when runID is
// empty) to close, and returns its history and its execution.
func (p *product) closedRun(t *testing.T, id, runID string) (*historypb.History, Execution) {
	t.Helper()
	run := runID
	producttest.Eventually(t, id+" to close", func() (bool, string) {
		r, status := p.describe(t, id, runID)
		run = r
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status.String()
	})
	return p.history(t, id, run), Execution{WorkflowID: id, RunID: run}
}

// atRestFor is how long a running workflow's history must stay the same,
// with no workflow task in flight, to be taken as at rest.
const atRestFor = time.Second

// openRun returns the history of a workflow's current run while it runs,
// once it is at rest: no workflow task in flight and nothing added for
// atRestFor. That is the history a new worker replays when it picks the
// workflow up.
func (p *product) openRun(t *testing.T, id string) (*historypb.History, Execution) {
	t.Helper()
	var h *historypb.History
	run := ""
	var since time.Time // when h was first seen as it is
	producttest.Eventually(t, id+" to be at rest", func() (bool, string) {
		r, status := p.describe(t, id, run)
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("%s is %s, not running", id, status)
		}
		run = r
		next := p.history(t, id, run)
		last := lastEvent(next).GetEventType()
		if h == nil || len(next.Events) != len(h.Events) || last == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED ||
			last == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			since = time.Now()
		}
		h = next
		return time.Since(since) >= atRestFor, fmt.Sprintf("%d events, last %s", len(h.Events), last)
	})
	return h, Execution{WorkflowID: id, RunID: run}
}
