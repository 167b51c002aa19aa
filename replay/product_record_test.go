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
)

// product is the product under recording.
type product struct{ *producttest.Product }

// startProduct runs the worker and the starter against the package's
// kube-apiserver and the given Temporal server until the test ends, then
// empties the cluster: SandboxConfigs are cluster-scoped, and one
// scenario's class default would move another's pools.
func startProduct(t *testing.T, temporal tclient.Client, interceptors ...interceptor.WorkerInterceptor) *product {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	return &product{(&producttest.Product{
		Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: temporal, Interceptors: interceptors,
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

// closedHistory waits for the current run of a workflow to close and
// returns its history.
func (p *product) closedHistory(t *testing.T, id string) *historypb.History {
	t.Helper()
	run := ""
	producttest.Eventually(t, id+" to close", func() (bool, string) {
		r, status := p.describe(t, id, "")
		run = r
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status.String()
	})
	return p.history(t, id, run)
}

// openHistory returns the history of a workflow's current run while it
// runs, once it is at rest: no workflow task in flight and nothing added
// for a second. That is the history a new worker replays when it picks the
// workflow up.
func (p *product) openHistory(t *testing.T, id string) *historypb.History {
	t.Helper()
	var h *historypb.History
	run, same := "", 0
	producttest.Eventually(t, id+" to be at rest", func() (bool, string) {
		r, status := p.describe(t, id, run)
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("%s is %s, not running", id, status)
		}
		run = r
		next := p.history(t, id, run)
		last := lastEvent(next).GetEventType()
		if h != nil && len(next.Events) == len(h.Events) && last != enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED &&
			last != enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			same++
		} else {
			same = 0
		}
		h = next
		time.Sleep(200 * time.Millisecond)
		return same >= 5, fmt.Sprintf("%d events, last %s", len(h.Events), last)
	})
	return h
}
