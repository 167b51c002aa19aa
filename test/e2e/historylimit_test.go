package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/interceptor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// historyLimit is the history event count past which this test's Temporal
// server terminates a workflow (51,200 in production): above a whole
// switch whose step was stuck (about 20 events, docs/decisions), below what
// a minute of retries on server timers adds to one (6 events a retry).
const historyLimit = 28

// TestAStuckStepStaysUnderTheHistoryLimit: a switch whose step keeps
// failing (Protect, its finalizer patch refused by an admission policy)
// adds no history events while it is retried, so the server's history
// limit, which would terminate the run (silently freeing the pool's switch
// ID and losing the move), is never reached however long the failure
// lasts; once the cause is gone, that same run makes the move. The limit
// is lowered to historyLimit so that a minute of failure shows it.
func TestAStuckStepStaysUnderTheHistoryLimit(t *testing.T) {
	limited, err := testenv.Start(testenv.Options{NoKube: true, TemporalDynamicConfig: map[string]string{
		"limit.historyCount.error": fmt.Sprint(historyLimit),
		"limit.historyCount.warn":  fmt.Sprint(historyLimit / 2),
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, limited.Stop()) })
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	attempts := &countingProtect{config: "hl-refused"}
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: limited.Temporal,
		Interceptors: []interceptor.WorkerInterceptor{attempts}}).Run(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	stuckOnProtect(t, p, ns, "stuck", "hl-refused")
	id := env.ClusterName.SwitchWorkflowID(ns, "stuck")
	d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	runID := d.WorkflowExecutionInfo.Execution.RunId

	// The stuck run, as retries go on: its history length and Protect's
	// attempts so far.
	look := func() (status enumspb.WorkflowExecutionStatus, events int64, tried int32) {
		d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, runID)
		require.NoError(t, err)
		return d.WorkflowExecutionInfo.Status, d.WorkflowExecutionInfo.HistoryLength, attempts.n.Load()
	}
	// The failure lasts a minute. The first look is taken once the step
	// has left its quick retries (about 12.6 s of 0.2 s doubling backoffs).
	stuck := time.Now()
	var firstEvents int64
	var firstTried int32
	producttest.EventuallyWithin(t, 2*time.Minute, "a minute of failure", func() (bool, string) {
		status, events, tried := look()
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status, "the stuck run (history %d events, %d attempts)", events, tried)
		if firstTried == 0 && time.Since(stuck) > 15*time.Second {
			firstEvents, firstTried = events, tried
		}
		return time.Since(stuck) > time.Minute, fmt.Sprintf("%d events, %d attempts", events, tried)
	})
	_, stuckEvents, tried := look()
	require.Greater(t, tried, firstTried, "Protect was retried")
	require.Equal(t, firstEvents, stuckEvents, "no history event per retry: %d events at attempt %d, %d at attempt %d", firstEvents, firstTried, stuckEvents, tried)

	producttest.LiftRefusal(t, env.Kube)
	p.WaitForConfig(t, ns, "stuck", "hl-refused", metav1.ConditionTrue)
	producttest.Eventually(t, "the stuck run to end", func() (bool, string) {
		status, events, _ := look()
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, fmt.Sprintf("%s, %d events", status, events)
	})
	status, events, _ := look()
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, status, "the run that was stuck made the move (%d events)", events)
	require.Less(t, events, int64(historyLimit))
	t.Logf("stuck: %d history events at Protect's attempt %d, %d at attempt %d; the switch completed with %d events",
		firstEvents, firstTried, stuckEvents, tried, events)
	var res wfapi.SwitchResult
	require.NoError(t, p.TemporalClient().GetWorkflow(ctx, id, runID).Get(ctx, &res))
	require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
}
