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
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// temporalCLI runs the temporal binary as an operator types it.
func temporalCLI(t *testing.T, p *producttest.Product, args ...string) (string, error) {
	t.Helper()
	args = append(args, "--address", p.Env.TemporalAddress, "--namespace", p.Env.TemporalNamespace)
	out, err := exec.Command(p.Env.TemporalCLI, args...).CombinedOutput()
	return string(out), err
}

// querySwitch reads the pool's last switch with the `state` query, as an
// operator does from the CLI.
func querySwitch(t *testing.T, p *producttest.Product, ns, name string) wfapi.SwitchState {
	t.Helper()
	out, err := temporalCLI(t, p, "workflow", "query", "--workflow-id", testenv.Current().ClusterName.SwitchWorkflowID(ns, name),
		"--name", wfapi.QueryState, "--output", "json")
	require.NoError(t, err, out)
	var resp struct {
		QueryResult []wfapi.SwitchState `json:"queryResult"`
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
// README's visibility query, reads the last one with the `state` query,
// asks for a re-resolution with `reresolve` from the CLI (a switch that finds
// nothing to move, or one that makes the move a change asked for), and a
// malformed or unknown signal changes nothing; `recheck` makes a release
// look again.
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
	id := testenv.Current().ClusterName.SwitchWorkflowID(ns, "traced")
	switches := func(want int) []string {
		query := fmt.Sprintf(`WorkerPool = %q AND WorkflowType = %q`, ns+"/traced", wfapi.SwitchWorkflow)
		var got []string
		producttest.Eventually(t, "the pool's switches in visibility", func() (bool, string) {
			resp, err := p.Env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
			if err != nil {
				return false, err.Error()
			}
			execs := resp.Executions
			sort.Slice(execs, func(i, j int) bool { return execs[i].StartTime.AsTime().Before(execs[j].StartTime.AsTime()) })
			got = got[:0]
			for _, e := range execs {
				if e.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
					return false, e.Execution.WorkflowId + " still " + e.Status.String()
				}
				got = append(got, fmt.Sprintf("%s %s->%s %s %s", e.Execution.WorkflowId,
					keyword(e.SearchAttributes, searchattr.FromConfig), keyword(e.SearchAttributes, searchattr.ToConfig),
					keyword(e.SearchAttributes, searchattr.SandboxClass), keyword(e.SearchAttributes, searchattr.Outcome)))
			}
			return len(got) == want, strings.Join(got, "; ")
		})
		return got
	}
	require.Equal(t, []string{
		id + " ->gvisor-default gvisor confirmed",
		id + " gvisor-default->gvisor-default-v2 gvisor confirmed",
	}, switches(2))
	require.Equal(t, wfapi.SwitchState{
		Pool: ns + "/traced", Class: "gvisor", From: "gvisor-default", To: "gvisor-default-v2",
		Step: "done", Outcome: wfapi.OutcomeConfirmed,
	}, querySwitch(t, p, ns, "traced"))

	// reresolve, as the README writes it, starts a switch that decides on a
	// live read: nothing to move here. A malformed payload and an unknown
	// signal change nothing either.
	reresolve := []string{"workflow", "signal-with-start", "--workflow-id", id, "--type", wfapi.SwitchWorkflow,
		"--task-queue", p.TaskQueue, "--signal-name", wfapi.SignalReresolve}
	for _, extra := range [][]string{nil, {"--signal-input", `{"not": "expected"}`}} {
		out, err := temporalCLI(t, p, append(reresolve, extra...)...)
		require.NoError(t, err, out)
		producttest.Eventually(t, "the re-resolution to end", func() (bool, string) {
			got := querySwitch(t, p, ns, "traced")
			return got.Outcome == wfapi.OutcomeUpToDate, fmt.Sprintf("%+v", got)
		})
	}
	out, err := temporalCLI(t, p, "workflow", "signal", "--workflow-id", id, "--name", "no-such-signal", "--input", "42")
	require.Error(t, err, "a signal to a closed switch is refused: %s", out)
	require.Len(t, switches(4), 4)
	require.Equal(t, "gvisor-default-v2", producttest.RefName(p.Get(t, ns, "traced").Status.SandboxClasses[0].ConfigRef))

	// A move asked for by hand, with the starter stopped: the re-resolution
	// makes it, and its switch carries the move's search attributes.
	p.Stop(t)
	p.NoStarter = true
	p.Start(t)
	producttest.SetDefault(t, kube, "gvisor-default-v2", false)
	out, err = temporalCLI(t, p, reresolve...)
	require.NoError(t, err, out)
	producttest.Eventually(t, "the re-resolution to move the pool back", func() (bool, string) {
		got := querySwitch(t, p, ns, "traced")
		return got.Outcome == wfapi.OutcomeConfirmed && got.To == "gvisor-default", fmt.Sprintf("%+v", got)
	})
	require.Equal(t, id+" gvisor-default-v2->gvisor-default gvisor confirmed", switches(5)[4])
	p.Stop(t)
	p.NoStarter = false
	p.Start(t)
	p.WaitForConfig(t, ns, "traced", "gvisor-default", metav1.ConditionTrue)

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
		out, err := temporalCLI(t, p, "workflow", "query", "--workflow-id", testenv.Current().ClusterName.ReleaseWorkflowID("held-for-cli"), "--name", wfapi.QueryState, "--output", "json")
		require.NoError(t, err, out)
		var resp struct {
			QueryResult []wfapi.ReleaseState `json:"queryResult"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
		return resp.QueryResult[0]
	}
	before := release()
	require.Equal(t, []string{ns + "/holder"}, before.Users)
	out, err = temporalCLI(t, p, "workflow", "signal", "--workflow-id", testenv.Current().ClusterName.ReleaseWorkflowID("held-for-cli"), "--name", wfapi.SignalRecheck)
	require.NoError(t, err, out)
	producttest.Eventually(t, "another look", func() (bool, string) {
		got := release()
		return got.Checks > before.Checks, fmt.Sprintf("checks %d, was %d", got.Checks, before.Checks)
	})
}
