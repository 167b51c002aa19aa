package fleet

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// TestTwoClustersOnOneTemporal is issue 35's scenario: two clusters, the
// same objects in both (a namespace, 20 unpinned gVisor pools and a pinned
// one, the class default old), each cluster's worker and starter on the
// same default settings (same Temporal namespace, no task queue, no cluster
// name), so that their identities are the two kube-system UIDs and their
// task queues differ. Then, in both at once, a new class default (a wave)
// and the deletion of old (its release); a pin in A only; a pool deleted in
// B only. Every pool of both converges, each move is recorded once in its
// own cluster, no switch ends "pool gone" for a pool that exists, the pin
// and the deletion change nothing in the other cluster, every workflow
// names its own cluster, old is released in both, and the invariant
// checker finds no violation of P1-P6 in either.
//
// The second case runs B's worker and starter as real processes (the
// binaries, configured by environment as an operator would) and kills B's
// worker mid-wave, right after the first Confirm of a move to the new
// default, before its completion reaches Temporal.
func TestTwoClustersOnOneTemporal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		killB bool
	}{
		{name: "default settings"},
		{name: "B's worker killed mid-wave", killB: true},
	} {
		t.Run(tc.name, func(t *testing.T) { runTwoClusters(t, tc.killB) })
	}
}

func runTwoClusters(t *testing.T, killB bool) {
	ctx := context.Background()
	a := clusterA(t, "")
	b, _ := newCluster(t, "B", "", "", "")
	clusters := []*cluster{a, b}
	require.NotEqual(t, a.id(), b.id(), "two clusters, two kube-system UIDs")
	require.NotEqual(t, a.scope().TaskQueue, b.scope().TaskQueue, "the default task queues are per cluster")
	t.Logf("cluster A %s on task queue %s; cluster B %s on task queue %s", a.id(), a.scope().TaskQueue, b.id(), b.scope().TaskQueue)

	prefix := "f" + shortID()
	f := newFixture(prefix, 20)
	newCfg := prefix + "-new"

	// The checkers watch from before the first object, so every write of
	// the test is judged.
	checkers := map[*cluster]*crashtest.Checker{}
	for _, c := range clusters {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		chk, err := crashtest.NewChecker(cctx, c.env.RestConfig, c.env.Scheme, c.env.Temporal)
		cancel()
		require.NoError(t, err, "%s", c)
		t.Cleanup(chk.Stop)
		checkers[c] = chk
	}

	a.runProduct(t)
	var bWorker *crashtest.Process
	if killB {
		bWorker, _ = b.runProcesses(t, "Confirm", newCfg)
	} else {
		b.runProduct(t)
	}
	for _, c := range clusters {
		f.create(t, c)
	}
	waitSettled(t, time.Now(), map[*cluster]map[string]string{a: f.initial(), b: f.initial()}, f.ns)
	for _, c := range clusters {
		for name, cfg := range f.initial() {
			waitEvents(t, c, f.ns, name, []string{usesNote(cfg)})
		}
	}

	// In both at once: the wave to newCfg and the release of old; then a
	// pin in A only and a deletion in B only.
	began := time.Now()
	for _, c := range clusters {
		producttest.CreateAfterOthers(t, c.env.Kube, producttest.GVisorConfig(newCfg, true))
	}
	for _, c := range clusters {
		require.NoError(t, c.env.Kube.Delete(ctx, producttest.GVisorConfig(f.old, false)), "%s", c)
	}
	pinnedInA, deletedInB := poolName(0), poolName(1)
	producttest.Repin(t, a.env.Kube, f.ns, pinnedInA, f.pin)
	require.NoError(t, b.env.Kube.Delete(ctx, producttest.Pool(f.ns, deletedInB, "")))
	if killB {
		bWorker.WaitCrash("Confirm", 60*time.Second)
		t.Logf("B's worker killed itself after its first Confirm of a move to %s, %s after the changes; restarted", newCfg, time.Since(began).Round(time.Millisecond))
		bWorker.Start()
	}

	want := map[*cluster]map[string]string{}
	for _, c := range clusters {
		want[c] = map[string]string{f.pinned: f.pin}
		for i := range f.unpinned {
			want[c][poolName(i)] = newCfg
		}
	}
	want[a][pinnedInA] = f.pin
	want[b][deletedInB] = goneConfig
	took := waitSettled(t, began, want, f.ns)

	// Each move once, in its own cluster; the pin and the deletion left
	// the other cluster's pool as every other.
	for _, c := range clusters {
		for name, cfg := range want[c] {
			switch {
			case cfg == goneConfig:
			case name == f.pinned:
				waitEvents(t, c, f.ns, name, []string{usesNote(f.pin)})
			case c == a && name == pinnedInA:
				waitChain(t, c, f.ns, name, f.old, f.pin)
			default:
				waitEvents(t, c, f.ns, name, []string{usesNote(f.old), switchedNote(f.old, newCfg)})
			}
		}
	}

	// old is released in both clusters, each by its own release workflow.
	for _, c := range clusters {
		waitReleased(t, c, f.old)
		var old v1alpha1.SandboxConfig
		err := c.env.Kube.Get(ctx, client.ObjectKey{Name: f.old}, &old)
		require.True(t, apierrors.IsNotFound(err), "%s: SandboxConfig %s released yet present (err %v, finalizers %v)", c, f.old, err, old.Finalizers)
	}

	for _, c := range clusters {
		rep := checkers[c].Check(ctx, crashtest.Scope{Namespaces: []string{f.ns}, Configs: prefixed(prefix), TaskQueues: []string{c.scope().TaskQueue}}, settleBound)
		t.Logf("%s: checker settled=%v after %s; %d switches (%d rolled back), %d releases; %d object states seen",
			c, rep.Converged, rep.Waited.Round(time.Millisecond), rep.Switches, rep.RolledBack, rep.Releases, rep.Records)
		for _, v := range rep.Violations {
			t.Errorf("%s: violation: %s", c, v)
		}
		if err := checkers[c].Err(); err != nil {
			t.Errorf("%s: checker: %v", c, err)
		}
	}

	for _, c := range clusters {
		requireOwnWorkflows(t, c)
		requireNoFalsePoolGone(t, c)
		runs := inNamespace(switchRuns(t, c, ""), f.ns)
		name, d := slowest(took[c])
		t.Logf("%s: %d switch runs in %s (%s); slowest pool %s settled %s after the changes",
			c, len(runs), f.ns, outcomes(runs), name, d.Round(time.Millisecond))
	}
}

var eventNote = regexp.MustCompile(`^Normal SandboxConfigSwitched: sandbox class "gvisor" (?:uses SandboxConfig "([^"]*)"|switched from SandboxConfig "([^"]*)" to "([^"]*)")$`)

// waitChain polls until a pool's SandboxConfigSwitched events are one
// chain of moves from its first config to last: "uses first", then each
// move from where the previous one went, to another config, ending on
// last. A pool pinned during a wave moves to the new default and then to
// its pin, or to its pin at once, depending on when its switch planned.
func waitChain(t testing.TB, c *cluster, ns, name, first, last string) {
	t.Helper()
	producttest.Eventually(t, fmt.Sprintf("the events of %s/%s in %s to go from %s to %s", ns, name, c, first, last), func() (bool, string) {
		evs := switchedEvents(t, c, ns, name)
		at := ""
		for i, ev := range evs {
			m := eventNote.FindStringSubmatch(ev)
			switch {
			case m == nil:
				return false, fmt.Sprintf("unexpected event %q in %q", ev, evs)
			case i == 0 && m[1] != first:
				return false, fmt.Sprintf("first event %q, want it to use %s", ev, first)
			case i == 0:
				at = first
			case m[1] != "" || m[2] != at || m[3] == at:
				return false, fmt.Sprintf("event %q does not move on from %s: %q", ev, at, evs)
			default:
				at = m[3]
			}
		}
		return at == last, fmt.Sprintf("%q", evs)
	})
}

// waitReleased polls until the cluster's release workflow of a config
// ended having released it.
func waitReleased(t testing.TB, c *cluster, config string) {
	t.Helper()
	query := fmt.Sprintf("WorkflowId = %q AND %s = %q", c.id().ReleaseWorkflowID(config), searchattr.Outcome, wfapi.OutcomeReleased)
	producttest.EventuallyWithin(t, settleBound, fmt.Sprintf("%s to release %s", c, config), func() (bool, string) {
		execs, err := crashtest.Executions(context.Background(), c.env.Temporal, query)
		if err != nil {
			return false, err.Error()
		}
		return len(execs) > 0, fmt.Sprintf("%d runs match %s", len(execs), query)
	})
}

// requireOwnWorkflows: every workflow on the cluster's task queue names
// the cluster in its ID and its KubernetesCluster attribute, and every
// workflow listed under the cluster runs on its task queue.
func requireOwnWorkflows(t testing.TB, c *cluster) {
	t.Helper()
	ctx := context.Background()
	onQueue, err := crashtest.Executions(ctx, c.env.Temporal, fmt.Sprintf("TaskQueue = %q", c.scope().TaskQueue))
	require.NoError(t, err)
	require.NotEmpty(t, onQueue, "%s: no workflow on its task queue", c)
	for _, e := range onQueue {
		id := e.Execution.WorkflowId
		owner, ok := wfapi.ClusterOf(id)
		require.True(t, ok && owner == c.id(), "%s: workflow %s on its task queue names cluster %q", c, id, owner)
		require.Equal(t, string(c.id()), keyword(e, searchattr.KubernetesCluster), "%s: the KubernetesCluster of %s", c, id)
		require.True(t, strings.HasPrefix(id, string(c.id())+"/"), "%s: workflow ID %s", c, id)
	}
	listed, err := crashtest.Executions(ctx, c.env.Temporal, fmt.Sprintf("%s = %q", searchattr.KubernetesCluster, c.id()))
	require.NoError(t, err)
	for _, e := range listed {
		require.Equal(t, c.scope().TaskQueue, e.TaskQueue, "%s: workflow %s of the cluster on another task queue", c, e.Execution.WorkflowId)
	}
}

// requireNoFalsePoolGone: a switch of the cluster that ended "pool gone"
// was about a pool that does not exist in the cluster.
func requireNoFalsePoolGone(t testing.TB, c *cluster) {
	t.Helper()
	for _, e := range switchRuns(t, c, fmt.Sprintf("%s = %q", searchattr.Outcome, wfapi.OutcomePoolGone)) {
		ns, name, _ := strings.Cut(keyword(e, searchattr.WorkerPool), "/")
		var wp v1alpha1.WorkerPool
		err := c.env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp)
		require.True(t, apierrors.IsNotFound(err), "%s: switch %s run %s ended %q, yet WorkerPool %s/%s exists (err %v)",
			c, e.Execution.WorkflowId, e.Execution.RunId, wfapi.OutcomePoolGone, ns, name, err)
	}
}
