package fleet

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// TestSameEtcdDataUnderTwoNames: two clusters made from one etcd's data (a
// standby restored from another cluster's snapshot) share kube-system's UID
// and every object's UID, so only the names an operator sets tell them
// apart. With names set (cluster-a, cluster-b) and the default task queues,
// a change in A moves A's pools and writes nothing in B: B's pools,
// Deployments and configs keep their resourceVersions and B gets no event.
// A switch of cluster-b started by hand on cluster-a's task queue is
// refused by A's worker before any step, with an error naming both
// clusters, and writes nothing in either.
//
// Cluster A is the seed cluster started again on its own state directory,
// as `make dev` restarts; cluster B runs on a copy of its etcd data.
func TestSameEtcdDataUnderTwoNames(t *testing.T) {
	ctx := context.Background()
	prefix := "s" + shortID()
	f := newFixture(prefix, 5)

	seed, seedStack := newCluster(t, "seed", "", "", "")
	f.create(t, seed)
	require.NoError(t, seedStack.Stop(), "stopping the seed cluster")
	etcdData := filepath.Join(seed.env.Dir, "kube", "etcd")
	copyDir := filepath.Join(t.TempDir(), "etcd")
	out, err := exec.Command("cp", "-a", etcdData, copyDir).CombinedOutput()
	require.NoError(t, err, "copying etcd's data: %s", out)

	a, _ := newCluster(t, "A", "cluster-a", seed.env.Dir, "")
	b, _ := newCluster(t, "B", "cluster-b", "", copyDir)
	require.Equal(t, a.env.ClusterName, b.env.ClusterName, "one etcd's data, one kube-system UID")
	require.Equal(t, seed.env.ClusterName, a.env.ClusterName, "restarted on its state, the seed keeps its identity")
	for _, name := range f.pools() {
		pa, pb := getPool(t, a, f.ns, name), getPool(t, b, f.ns, name)
		require.Equal(t, pa.UID, pb.UID, "WorkerPool %s/%s has one UID in both clusters", f.ns, name)
	}
	t.Logf("both clusters' kube-system UID is %s; named cluster-a (task queue %s) and cluster-b (task queue %s)",
		a.env.ClusterName, a.scope().TaskQueue, b.scope().TaskQueue)

	checkers := map[*cluster]*crashtest.Checker{}
	for _, c := range []*cluster{a, b} {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		chk, err := crashtest.NewChecker(cctx, c.env.RestConfig, c.env.Scheme, c.env.Temporal)
		cancel()
		require.NoError(t, err, "%s", c)
		t.Cleanup(chk.Stop)
		checkers[c] = chk
	}
	scopeOf := func(c *cluster) crashtest.Scope {
		return crashtest.Scope{Namespaces: []string{f.ns}, Configs: prefixed(prefix), TaskQueues: []string{c.scope().TaskQueue}}
	}

	a.runProduct(t)
	b.runProduct(t)
	waitSettled(t, time.Now(), map[*cluster]map[string]string{a: f.initial(), b: f.initial()}, f.ns)
	require.NoError(t, checkers[b].Settle(ctx, scopeOf(b), settleBound))
	before := snapshot(t, b, f.ns, prefix)

	// A change in A only: a new class default, and a pin.
	newCfg := prefix + "-new"
	began := time.Now()
	producttest.CreateAfterOthers(t, a.env.Kube, producttest.GVisorConfig(newCfg, true))
	pinnedInA := poolName(0)
	producttest.Repin(t, a.env.Kube, f.ns, pinnedInA, f.pin)
	want := map[string]string{f.pinned: f.pin}
	for i := range f.unpinned {
		want[poolName(i)] = newCfg
	}
	want[pinnedInA] = f.pin
	took := waitSettled(t, began, map[*cluster]map[string]string{a: want}, f.ns)
	for name, cfg := range want {
		switch name {
		case f.pinned:
			waitEvents(t, a, f.ns, name, []string{usesNote(cfg)})
		case pinnedInA:
			waitChain(t, a, f.ns, name, f.old, f.pin)
		default:
			waitEvents(t, a, f.ns, name, []string{usesNote(f.old), switchedNote(f.old, newCfg)})
		}
	}
	require.NoError(t, checkers[a].Settle(ctx, scopeOf(a), settleBound))
	requireUnchanged(t, b, before, snapshot(t, b, f.ns, prefix), "after the change in A")
	name, d := slowest(took[a])
	t.Logf("A settled on the change (slowest %s, %s); B unchanged: %d objects at the same resourceVersion, %d events",
		name, d.Round(time.Millisecond), len(before.versions), len(before.events))

	// A switch of cluster-b, by hand, on cluster-a's task queue: the worker
	// of cluster-a refuses it.
	beforeA := snapshot(t, a, f.ns, prefix)
	target := getPool(t, a, f.ns, poolName(1))
	in := wfapi.SwitchInput{
		Pool:  wfapi.PoolRef{Namespace: f.ns, Name: target.Name, UID: string(target.UID)},
		Class: v1alpha1.SandboxClassGVisor, From: newCfg, To: f.pin, Generation: target.Generation,
	}
	opts := wfapi.SwitchStartOptions(wfapi.Scope{Cluster: b.id(), TaskQueue: a.scope().TaskQueue}, in)
	require.Equal(t, "cluster-b/workerpool/"+f.ns+"/"+target.Name+"/switch", opts.ID)
	run, err := a.env.Temporal.ExecuteWorkflow(ctx, opts, wfapi.SwitchWorkflow, in)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = run.Get(wctx, nil)
	require.Error(t, err, "cluster-a's worker ran a switch of cluster-b")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "the switch failed with %v, not an application error", err)
	require.Equal(t, activities.ErrForeignCluster, app.Type(), "the switch failed with %v", err)
	require.Contains(t, app.Error(), `cluster "cluster-b"`)
	require.Contains(t, app.Error(), `cluster "cluster-a"`)
	t.Logf("the hand-started switch %s on %s failed: %v", opts.ID, opts.TaskQueue, app)
	for _, c := range []*cluster{a, b} {
		require.NoError(t, checkers[c].Settle(ctx, scopeOf(c), settleBound))
	}
	requireUnchanged(t, a, beforeA, snapshot(t, a, f.ns, prefix), "after the refused switch")
	requireUnchanged(t, b, before, snapshot(t, b, f.ns, prefix), "after the refused switch")

	// The invariants held in both, throughout. The refused run is on A's
	// task queue: it is the one failed workflow the checker may report.
	for _, c := range []*cluster{a, b} {
		rep := checkers[c].Check(ctx, scopeOf(c), settleBound)
		t.Logf("%s: checker settled=%v; %d switches, %d releases; %d object states seen", c, rep.Converged, rep.Switches, rep.Releases, rep.Records)
		for _, v := range rep.Violations {
			if c == a && v.Property == "P6" && len(v.Objects) == 1 && strings.HasPrefix(v.Objects[0], "workflow "+opts.ID+" run ") {
				continue
			}
			t.Errorf("%s: violation: %s", c, v)
		}
	}
}

func getPool(t testing.TB, c *cluster, ns, name string) *v1alpha1.WorkerPool {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, c.env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp), "%s", c)
	return &wp
}

// state is what a cluster holds of a test: the resourceVersion of each
// pool and Deployment of its namespace and each config of its prefix, and
// the names of the namespace's events.
type state struct {
	versions map[string]string
	events   []string
}

func snapshot(t testing.TB, c *cluster, ns, prefix string) state {
	t.Helper()
	ctx := context.Background()
	s := state{versions: map[string]string{}}
	var pools v1alpha1.WorkerPoolList
	require.NoError(t, c.env.Kube.List(ctx, &pools, client.InNamespace(ns)))
	for _, p := range pools.Items {
		s.versions["WorkerPool "+p.Name] = p.ResourceVersion
	}
	var deps appsv1.DeploymentList
	require.NoError(t, c.env.Kube.List(ctx, &deps, client.InNamespace(ns)))
	for _, d := range deps.Items {
		s.versions["Deployment "+d.Name] = d.ResourceVersion
	}
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, c.env.Kube.List(ctx, &configs))
	for _, cfg := range configs.Items {
		if strings.HasPrefix(cfg.Name, prefix) {
			s.versions["SandboxConfig "+cfg.Name] = cfg.ResourceVersion
		}
	}
	evs, err := c.cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ev := range evs.Items {
		s.events = append(s.events, fmt.Sprintf("%s (%s %s: %s)", ev.Name, ev.Regarding.Name, ev.Reason, ev.Note))
	}
	slices.Sort(s.events)
	return s
}

func requireUnchanged(t testing.TB, c *cluster, before, after state, when string) {
	t.Helper()
	require.Equal(t, before.versions, after.versions, "%s: objects written %s", c, when)
	require.Equal(t, before.events, after.events, "%s: events recorded %s", c, when)
	require.NotEmpty(t, before.versions)
}
