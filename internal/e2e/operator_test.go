package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// temporalCLI runs the temporal binary as an operator types it.
func temporalCLI(t *testing.T, p *producttest.Product, args ...string) (string, error) {
	t.Helper()
	args = append(args, "--address", p.Env.TemporalAddress, "--namespace", p.Env.TemporalNamespace)
	out, err := exec.Command(p.Env.TemporalCLI, args...).CombinedOutput()
	return string(out), err
}

func queryPool(t *testing.T, p *producttest.Product, ns, name string) wfapi.PoolState {
	t.Helper()
	out, err := temporalCLI(t, p, "workflow", "query", "--workflow-id", wfapi.PoolWorkflowID(ns, name),
		"--name", wfapi.QueryState, "--output", "json")
	require.NoError(t, err, out)
	var resp struct {
		QueryResult []wfapi.PoolState `json:"queryResult"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	require.Len(t, resp.QueryResult, 1, out)
	return resp.QueryResult[0]
}

func keyword(attrs *commonpb.SearchAttributes, name string) string {
	var s string
	if p := attrs.GetIndexedFields()[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}

// TestOperatorSurface: an operator lists a pool's switches in order with the
// README's visibility query, reads the pool's view with the `state` query,
// forces passes with `reresolve` and `recheck` from the CLI, and a malformed
// or unknown signal changes nothing.
func TestOperatorSurface(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "traced", "")))
	p.WaitForConfig(t, ns, "traced", "gvisor-default", metav1.ConditionTrue)
	p.CreateAfterOthers(t, producttest.GVisorConfig("gvisor-default-v2", true))
	p.WaitForConfig(t, ns, "traced", "gvisor-default-v2", metav1.ConditionTrue)

	// The README's query.
	query := fmt.Sprintf(`WorkerPool = %q AND WorkflowType = %q`, ns+"/traced", wfapi.SwitchWorkflow)
	var switches []string
	producttest.Eventually(t, "the pool's switches in visibility", func() (bool, string) {
		resp, err := p.Env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		execs := resp.Executions
		sort.Slice(execs, func(i, j int) bool { return execs[i].StartTime.AsTime().Before(execs[j].StartTime.AsTime()) })
		switches = switches[:0]
		for _, e := range execs {
			if e.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				return false, e.Execution.WorkflowId + " still " + e.Status.String()
			}
			switches = append(switches, fmt.Sprintf("%s %s->%s %s %s", e.Execution.WorkflowId,
				keyword(e.SearchAttributes, searchattr.FromConfig), keyword(e.SearchAttributes, searchattr.ToConfig),
				keyword(e.SearchAttributes, searchattr.SandboxClass), keyword(e.SearchAttributes, searchattr.Outcome)))
		}
		return len(switches) == 2, strings.Join(switches, "; ")
	})
	require.Equal(t, []string{
		fmt.Sprintf("workerpool/%s/traced/switch/1 ->gvisor-default gvisor confirmed", ns),
		fmt.Sprintf("workerpool/%s/traced/switch/2 gvisor-default->gvisor-default-v2 gvisor confirmed", ns),
	}, switches)

	state := queryPool(t, p, ns, "traced")
	require.Equal(t, 2, state.Switches)
	require.Len(t, state.Classes, 1)
	require.Equal(t, wfapi.ClassState{
		Name: "gvisor", Config: "gvisor-default-v2", Resolved: true, Reason: "Resolved",
		Message:     `resolved to SandboxConfig "gvisor-default-v2"`,
		LastOutcome: wfapi.OutcomeConfirmed, Switches: 2,
	}, state.Classes[0])

	// reresolve forces a pass; a malformed payload and an unknown signal
	// are ignored and the workflow keeps running.
	for _, args := range [][]string{
		{"--name", wfapi.SignalReresolve},
		{"--name", wfapi.SignalReresolve, "--input", `{"not": "expected"}`},
		{"--name", "no-such-signal", "--input", `42`},
	} {
		out, err := temporalCLI(t, p, append([]string{"workflow", "signal", "--workflow-id", wfapi.PoolWorkflowID(ns, "traced")}, args...)...)
		require.NoError(t, err, out)
	}
	producttest.Eventually(t, "two more passes", func() (bool, string) {
		got := queryPool(t, p, ns, "traced")
		return got.Passes >= state.Passes+1, fmt.Sprintf("passes %d, was %d", got.Passes, state.Passes)
	})
	out, err := temporalCLI(t, p, "workflow", "describe", "--workflow-id", wfapi.PoolWorkflowID(ns, "traced"), "--output", "json")
	require.NoError(t, err, out)
	require.Contains(t, out, `"WORKFLOW_EXECUTION_STATUS_RUNNING"`)
	require.Equal(t, "gvisor-default-v2", queryPool(t, p, ns, "traced").Classes[0].Config)

	// recheck on a release workflow takes another look.
	require.NoError(t, kube.Delete(ctx, producttest.GVisorConfig("gvisor-default-v2", true)))
	p.WaitForConfig(t, ns, "traced", "gvisor-default", metav1.ConditionTrue)
	held := producttest.GVisorConfig("held-for-cli", false)
	require.NoError(t, kube.Create(ctx, held))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "holder", "held-for-cli")))
	p.WaitForConfig(t, ns, "holder", "held-for-cli", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, held))
	p.WaitForRelease(t, "held-for-cli", wfapi.OutcomeWaiting)
	release := func() wfapi.ReleaseState {
		out, err := temporalCLI(t, p, "workflow", "query", "--workflow-id", wfapi.ReleaseWorkflowID("held-for-cli"), "--name", wfapi.QueryState, "--output", "json")
		require.NoError(t, err, out)
		var resp struct {
			QueryResult []wfapi.ReleaseState `json:"queryResult"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
		return resp.QueryResult[0]
	}
	before := release()
	require.Equal(t, []string{ns + "/holder"}, before.Users)
	out, err = temporalCLI(t, p, "workflow", "signal", "--workflow-id", wfapi.ReleaseWorkflowID("held-for-cli"), "--name", wfapi.SignalRecheck)
	require.NoError(t, err, out)
	producttest.Eventually(t, "another look", func() (bool, string) {
		got := release()
		return got.Checks > before.Checks, fmt.Sprintf("checks %d, was %d", got.Checks, before.Checks)
	})
}
