package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/starter"
)

// TestAStarterRestartedMidWaveLeavesItsSwitchesAlone: a starter starts a
// wave's switches and is replaced (a restart, a leader handover) before any
// worker takes them. The new starter knows nothing of them; its starts are
// refused because each pool's switch runs, and that switch already makes
// the move the pool needs: it is not asked to re-plan. So no switch is
// signalled (a signal would make a queued switch yield before its claim and
// run again from an Observe, and re-run a task in flight), each pool's wave
// is one run, and each pool moves exactly once. A pool re-pinned meanwhile
// needs another move than its running switch makes: that switch, and only
// it, is asked once to re-plan.
func TestAStarterRestartedMidWaveLeavesItsSwitchesAlone(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	tc := p.TemporalClient()
	const pools = 4
	names := make([]string, pools)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("first", true)))
	for i := range names {
		names[i] = fmt.Sprintf("pool-%d", i)
		require.NoError(t, kube.Create(ctx, producttest.Pool(ns, names[i], "")))
	}
	const repinned = "repinned"
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, repinned, "")))
	all := append(slices.Clone(names), repinned)
	for _, name := range all {
		p.WaitForConfig(t, ns, name, "first", metav1.ConditionTrue)
	}
	firstRuns := map[string]string{}
	for _, name := range all {
		d, err := tc.DescribeWorkflowExecution(ctx, p.Cluster().SwitchWorkflowID(ns, name), "")
		require.NoError(t, err)
		firstRuns[name] = d.WorkflowExecutionInfo.Execution.RunId
	}

	// The wave: a new class default, with the starter alone (no worker
	// takes a switch's task yet).
	p.Stop(t)
	p.NoStarter = true
	p.CreateAfterOthers(t, producttest.GVisorConfig("second", true))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("third", false)))
	stopFirst := runStarter(t, p)
	for _, name := range all {
		id := p.Cluster().SwitchWorkflowID(ns, name)
		producttest.Eventually(t, "the wave's switch of "+name+" to be queued", func() (bool, string) {
			d, err := tc.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false, err.Error()
			}
			info := d.WorkflowExecutionInfo
			return info.Execution.RunId != firstRuns[name] && info.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
				fmt.Sprintf("run %s %s", info.Execution.RunId, info.Status)
		})
	}
	stopFirst()
	producttest.Repin(t, kube, ns, repinned, "third")

	// The replacement starter: every pool's start refused (its switch
	// runs) before a worker takes any of them.
	refusedBefore := starterSignals(t, "switch-running")
	signalsBefore := starterSignals(t, "reresolve")
	t.Cleanup(runStarter(t, p))
	producttest.Eventually(t, "the new starter's start of every pool to be refused", func() (bool, string) {
		n := starterSignals(t, "switch-running") - refusedBefore
		return n >= pools+1, fmt.Sprintf("%v refused starts", n)
	})
	p.Start(t) // the worker
	for _, name := range names {
		p.WaitForConfig(t, ns, name, "second", metav1.ConditionTrue)
	}
	p.WaitForConfig(t, ns, repinned, "third", metav1.ConditionTrue)

	for _, name := range names {
		runs, signals, moves := waveOf(t, p, ns, name, firstRuns[name])
		require.Empty(t, signals, "signals to the wave's switches of %s", name)
		require.Len(t, runs, 1, "the wave's runs of %s's switch: %q", name, runs)
		require.Equal(t, []string{"Normal SandboxConfigSwitched: sandbox class \"gvisor\" switched from SandboxConfig \"first\" to \"second\""}, moves,
			"%s's moves", name)
	}
	require.Equal(t, 1.0, starterSignals(t, "reresolve")-signalsBefore, "reresolve signals the new starter sent")
	_, signals, moves := waveOf(t, p, ns, repinned, firstRuns[repinned])
	require.Len(t, signals, 1, "signals to the re-pinned pool's switch")
	require.Equal(t, []string{"Normal SandboxConfigSwitched: sandbox class \"gvisor\" switched from SandboxConfig \"first\" to \"third\""}, moves,
		"the re-pinned pool's moves")
}

// waveOf returns the runs of a pool's switch after its first one, the
// signals they received, and the pool's SandboxConfigSwitched events after the first
// resolution.
func waveOf(t *testing.T, p *producttest.Product, ns, name, firstRun string) (runs, signals, moves []string) {
	t.Helper()
	ctx := context.Background()
	tc := p.TemporalClient()
	id := p.Cluster().SwitchWorkflowID(ns, name)
	resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q AND TaskQueue = %q", id, p.Scope().TaskQueue)})
	require.NoError(t, err)
	for _, e := range resp.Executions {
		run := e.Execution.RunId
		if run == firstRun {
			continue
		}
		runs = append(runs, fmt.Sprintf("%s %s", run, e.Status))
		it := tc.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
				signals = append(signals, fmt.Sprintf("run %s (%s) event %d: %s", run, e.Status, ev.EventId, a.SignalName))
			}
		}
	}
	for _, ev := range p.Events(t, ns, name) {
		if strings.Contains(ev, v1alpha1.EventReasonSandboxConfigSwitched) && strings.Contains(ev, "switched from") {
			moves = append(moves, ev)
		}
	}
	return runs, signals, moves
}

// runStarter runs a starter of p's scope alone, until the returned func
// is called.
func runStarter(t *testing.T, p *producttest.Product) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- starter.Run(ctx, starter.Config{Rest: p.Env.RestConfig, Temporal: p.TemporalClient(),
			ClusterName: string(p.ClusterName), TaskQueue: p.TaskQueue, SkipNameValidation: true})
	}()
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
}

// starterSignals reads ate_starter_signals_total{kind} from the registry
// the starters of this process count in (the one their /metrics serves).
func starterSignals(t *testing.T, kind string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "ate_starter_signals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
