//go:build record

package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// recordOperator records the operator workflow, the one execution every
// cluster keeps running and so the one history every upgrade replays: it
// gets a `reresolve` of one pool, a `reresolve` it rejects (an unknown
// field), and a `recheck` of a config, carries out the two valid requests
// one after the other, and is exported idle, as a new worker finds it.
func recordOperator(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)
	require.NoError(t, env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-now", false)))
	require.NoError(t, env.Kube.Create(ctx, producttest.Pool(ns, "asked", "gvisor-now")))
	p.WaitForConfig(t, ns, "asked", "gvisor-now", metav1.ConditionTrue)

	tc := p.TemporalClient()
	id := recordedCluster.OperatorWorkflowID()
	producttest.Eventually(t, "the operator workflow to run", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false, err.Error()
		}
		return d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status.String()
	})
	for _, s := range []struct {
		name  string
		input any
	}{
		{wfapi.SignalReresolve, map[string]string{"pool": ns + "/asked", "by": "replay recorder"}},
		{wfapi.SignalReresolve, map[string]string{"pool": ns + "/asked", "colour": "blue"}},
		{wfapi.SignalRecheck, map[string]string{"config": "gvisor-now", "by": "replay recorder"}},
	} {
		require.NoError(t, tc.SignalWorkflow(ctx, id, "", s.name, s.input), "signal %s %v", s.name, s.input)
	}
	producttest.Eventually(t, "the three signals handled", func() (bool, string) {
		v, err := tc.QueryWorkflow(ctx, id, "", wfapi.QueryState)
		if err != nil {
			return false, err.Error()
		}
		var state wfapi.OperatorState
		if err := v.Get(&state); err != nil {
			return false, err.Error()
		}
		return state.Received == 3 && len(state.Pending) == 0 && len(state.Recent) == 3,
			fmt.Sprintf("received %d, pending %d, rejected %d, recent %d", state.Received, len(state.Pending), state.Rejected, len(state.Recent))
	})
	h, run := p.openRun(t, id)
	rec.save("operator-requests", h, run)
}
