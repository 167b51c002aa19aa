package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/wfapi"
)

// operatorInputBound is what the input of a run of the operator workflow
// may weigh after a burst: far under the server's 2 MB limit on a payload
// (past it, the continue-as-new is refused and the queue lost), and under
// the 512 KB at which the server warns.
const operatorInputBound = 64 << 10

// TestAnOperatorBurstCrossesContinueAsNewBounded: a burst of `reresolve`
// signals, many naming the same pools and each with a long `by` note,
// lands while no worker runs. Its history passes the size at which the
// server suggests continuing as new, so the first task continues as new
// with everything received; that input stays small (identical requests
// merged, each note cut short), the operator workflow keeps running, and
// every signal is accounted for: carried out (alone or merged into an
// identical request), or rejected and counted. The continued run shows its
// own memo.
func TestAnOperatorBurstCrossesContinueAsNewBounded(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	tc := p.TemporalClient()
	id := p.Cluster().OperatorWorkflowID()
	producttest.Eventually(t, "the operator workflow to run", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false, err.Error()
		}
		return d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status.String()
	})
	p.Stop(t)
	p.NoStarter = true // nothing starts the operator workflow again behind the test's back

	const pools, each = 40, 50
	const total = pools * each
	note := strings.Repeat("x", 2500)
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				req := map[string]string{"pool": fmt.Sprintf("%s/pool-%d", ns, n%pools), "by": fmt.Sprintf("signal %d: %s", n, note)}
				if err := tc.SignalWorkflow(ctx, id, "", wfapi.SignalReresolve, req); err != nil {
					errs <- fmt.Errorf("signal %d: %w", n, err)
				}
			}
		}()
	}
	for n := range total {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	p.Start(t) // the worker alone
	var state wfapi.OperatorState
	producttest.Eventually(t, "every signal handled", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false, err.Error()
		}
		run := d.WorkflowExecutionInfo.Execution.RunId
		if s := d.WorkflowExecutionInfo.Status; s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			require.FailNow(t, "the operator workflow ended", "run %s: %s", run, s)
		}
		if d.PendingWorkflowTask.GetAttempt() > 2 {
			require.FailNow(t, "the operator workflow's task keeps failing", "run %s, attempt %d: %s",
				run, d.PendingWorkflowTask.GetAttempt(), lastTaskFailure(t, p, id, run))
		}
		v, err := tc.QueryWorkflow(ctx, id, "", wfapi.QueryState)
		if err != nil {
			return false, err.Error()
		}
		state = wfapi.OperatorState{}
		if err := v.Get(&state); err != nil {
			return false, err.Error()
		}
		return state.Received == total && len(state.Pending) == 0,
			fmt.Sprintf("received %d, pending %d, rejected %d", state.Received, len(state.Pending), state.Rejected)
	})

	// Every run's input, and the requests carried out.
	resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q AND TaskQueue = %q", id, p.Scope().TaskQueue)})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(resp.Executions), 2, "the run the burst reached, and at least one continued run")
	accounted := state.Rejected
	perPool := map[string]int{}
	for _, e := range resp.Executions {
		run := e.Execution.RunId
		it := tc.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				size := 0
				for _, pl := range a.GetInput().GetPayloads() {
					size += len(pl.GetData())
				}
				require.LessOrEqual(t, size, operatorInputBound, "the input of run %s", run)
				t.Logf("run %s (%s): input of %d bytes", run, e.Status, size)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "OperatorReresolve" {
				var req wfapi.OperatorRequest
				require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &req))
				require.LessOrEqual(t, len(req.By), 256, "a request's note is cut short")
				accounted += 1 + req.Repeats
				perPool[req.Pool]++
			}
		}
	}
	require.Equal(t, total, accounted, "signals carried out, merged or rejected (%d rejected)", state.Rejected)
	require.Len(t, perPool, pools, "pools looked at: %v", perPool)

	d, err := tc.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	var summary string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.WorkflowExecutionInfo.GetMemo().GetFields()["summary"], &summary))
	require.Contains(t, summary, "continued as new", "the continued run's memo is its own")
}

// lastTaskFailure is the last workflow task failure of a run, as its
// history records it.
func lastTaskFailure(t *testing.T, p *producttest.Product, id, run string) string {
	t.Helper()
	it := p.TemporalClient().GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	last := "none recorded"
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			last = fmt.Sprintf("%s: %s", a.GetCause(), a.GetFailure().GetMessage())
		}
	}
	return last
}
