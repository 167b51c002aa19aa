package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// fanInPools is how many unpinned pools follow the default that
// TestReleaseOfAnOldDefaultIsWokenOnce replaces.
const fanInPools = 24

// maxReleaseWakeUps bounds the recheck signals of the old default's release:
// the starter's at the deletion mark (which starts it), the starter's when
// its cache shows the count of users reach zero, and the last switch's (at
// most one per worker, see activities.WakeReleases). One per switch, as
// before docs/decisions/0014-release-fan-in.md, was about 2*fanInPools.
const maxReleaseWakeUps = 3

// TestReleaseOfAnOldDefaultIsWokenOnce: the natural roll of a class default,
// a new default created and the old one deleted at once, with many
// unpinned pools on the old one. Every pool moves; the old default is
// released; its release (every run of it) was woken a constant number of
// times, not once per switch, and never needed its fallback timer.
func TestReleaseOfAnOldDefaultIsWokenOnce(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	old := producttest.GVisorConfig("fanin-old", true)
	require.NoError(t, kube.Create(ctx, old))
	for i := range fanInPools {
		require.NoError(t, kube.Create(ctx, producttest.Pool(ns, fmt.Sprintf("p%02d", i), "")))
	}
	requireAllOn(t, kube, ns, old.Name)

	next := producttest.GVisorConfig("fanin-new", true)
	producttest.CreateAfterOthers(t, kube, next)
	require.NoError(t, kube.Delete(ctx, old))
	requireAllOn(t, kube, ns, next.Name)
	p.WaitGone(t, old)

	// Every run of the release, closed: a wake-up that came during its last
	// look continues it as new, and one after its end starts another. The
	// task queue is this test's: the ID is the same in a test run again.
	tc := p.TemporalClient()
	query := fmt.Sprintf("WorkflowId = %q AND TaskQueue = %q", p.Cluster().ReleaseWorkflowID(old.Name), p.Scope().TaskQueue)
	var runs []string
	producttest.Eventually(t, "every run of the release of "+old.Name+" closed", func() (bool, string) {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		runs = runs[:0]
		for _, e := range resp.Executions {
			if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return false, "run " + e.Execution.RunId + " still running"
			}
			runs = append(runs, e.Execution.RunId)
		}
		return len(runs) > 0, fmt.Sprintf("%d runs", len(runs))
	})
	signals, timers := 0, 0
	for _, run := range runs {
		it := tc.GetWorkflowHistory(ctx, p.Cluster().ReleaseWorkflowID(old.Name), run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err, "reading the history of run %s of the release of %s", run, old.Name)
			switch ev.EventType {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				signals++
			case enumspb.EVENT_TYPE_TIMER_FIRED:
				timers++
			}
		}
	}
	t.Logf("release of %s: %d runs, %d recheck signals, %d fallback timers fired, for %d pools", old.Name, len(runs), signals, timers, fanInPools)
	require.LessOrEqual(t, signals, maxReleaseWakeUps, "the release is woken when its last user goes, not once per switch")
	require.Zero(t, timers, "the release was woken by a signal, not by its fallback timer")
}

// requireAllOn waits until every pool of the namespace shows config as its
// gvisor class's config, with no claim pending.
func requireAllOn(t *testing.T, kube client.Client, ns, config string) {
	t.Helper()
	producttest.Eventually(t, fmt.Sprintf("all %d pools on %s", fanInPools, config), func() (bool, string) {
		var pools v1alpha1.WorkerPoolList
		if err := kube.List(context.Background(), &pools, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		on := 0
		for _, wp := range pools.Items {
			if names := wp.Status.ConfigNames(); len(names) == 1 && names[0] == config {
				on++
			}
		}
		return on == fanInPools, fmt.Sprintf("%d of %d pools on %s", on, len(pools.Items), config)
	})
}
