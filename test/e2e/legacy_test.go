package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/producttest"
)

// TestLegacyPoolWorkflowsRetire: a pool workflow left running by a version
// before the lean switch ends once the starter of this version starts, and
// its pool stays as it was.
func TestLegacyPoolWorkflowsRetire(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "old-timer", "")))
	p.WaitForConfig(t, ns, "old-timer", "gvisor-default", metav1.ConditionTrue)

	p.Stop(t)
	require.NoError(t, wfapi.SignalPool(ctx, p.TemporalClient(), p.TaskQueue, ns, "old-timer"))
	p.Start(t)
	run := p.TemporalClient().GetWorkflow(ctx, wfapi.PoolWorkflowID(ns, "old-timer"), "")
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, run.Get(waitCtx, nil), "the legacy pool workflow ends")
	d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.WorkflowExecutionInfo.Status)
	p.WaitForConfig(t, ns, "old-timer", "gvisor-default", metav1.ConditionTrue)
	p.WaitForEvents(t, ns, "old-timer", []string{`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`})
}
