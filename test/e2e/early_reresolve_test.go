package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestAReresolveLandingBeforeAMovesFirstTask: an operator's `reresolve`
// (signal-with-start) lands on a starter-started switch before its first
// task (here: no worker runs yet). The run yields before its claim and
// continues as new for the look the signal asked for; that run plans the
// move from its own live read, makes it, and shows its own outcome.
func TestAReresolveLandingBeforeAMovesFirstTask(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	tc := p.TemporalClient()

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("first", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	p.WaitForConfig(t, ns, "pool", "first", metav1.ConditionTrue)
	p.Stop(t)
	p.NoStarter = true
	p.CreateAfterOthers(t, producttest.GVisorConfig("second", true))
	wp := p.Get(t, ns, "pool")

	// The starter's start, then the operator's signal, both before any
	// worker takes the run's first task.
	ref := wfapi.PoolRef{Namespace: ns, Name: "pool", UID: string(wp.UID)}
	move := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "first", To: "second"}
	require.NoError(t, wfapi.StartSwitch(ctx, tc, p.Scope(), wfapi.MoveInput(ref, move, wp.Generation, wp.ResourceVersion)))
	require.NoError(t, wfapi.Reresolve(ctx, tc, wfapi.ScopeOf(testenv.Current().ClusterName, p.TaskQueue), ns, "pool", nil))
	p.Start(t)
	p.WaitForConfig(t, ns, "pool", "second", metav1.ConditionTrue)

	id := testenv.Current().ClusterName.SwitchWorkflowID(ns, "pool")
	query := fmt.Sprintf(`WorkflowId = %q`, id)
	var got []string
	producttest.Eventually(t, "the move's run, then the look it continued as", func() (bool, string) {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		execs := resp.Executions
		sort.Slice(execs, func(i, j int) bool { return execs[i].StartTime.AsTime().Before(execs[j].StartTime.AsTime()) })
		got = got[:0]
		for _, e := range execs {
			got = append(got, fmt.Sprintf("%s %s->%s %s", e.Status,
				keyword(e.SearchAttributes, searchattr.FromConfig), keyword(e.SearchAttributes, searchattr.ToConfig),
				keyword(e.SearchAttributes, searchattr.Outcome)))
		}
		n := len(got)
		return n >= 3 && !strings.Contains(got[n-1], enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING.String()), strings.Join(got, "; ")
	})
	n := len(got)
	require.Equal(t, []string{
		enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW.String() + " first->second ",
		enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED.String() + " first->second " + wfapi.OutcomeConfirmed,
	}, got[n-2:], "all runs: %q", got)
}
