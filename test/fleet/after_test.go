package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestRolloutAfterAnotherCluster is a wave across clusters
// (spec.rollout.after, docs/decisions/0027-waves-across-clusters.md): two
// clusters' API servers, nothing between them but the one Temporal. A
// (testenv's, on its default name) rolls a new default out with a gate
// that halts its first step; local-2 rolls out the same-named config with
// after: {clusters: [A]}. While A's rollout is in progress and then halted,
// local-2 admits no pool, and its status says AwaitingClusters, naming A,
// its phase there and why; once A's rollout is resumed and completes,
// local-2's starts and completes.
func TestRolloutAfterAnotherCluster(t *testing.T) {
	ctx := context.Background()
	a := clusterA(t, "")
	b, _ := newCluster(t, "B", "local-2", "", "")
	clusters := []*cluster{a, b}
	for _, c := range clusters {
		// A short read interval: the wait's wake-up is what is tested.
		(&producttest.Product{Env: c.env, Clientset: c.cs, ClusterName: c.name, RolloutAfterPoll: time.Second}).Run(t)
	}
	prefix := "w" + shortID()
	f := newFixture(prefix, 3)
	newCfg := prefix + "-new"
	for _, c := range clusters {
		f.create(t, c)
	}
	waitSettled(t, time.Now(), map[*cluster]map[string]string{a: f.initial(), b: f.initial()}, f.ns)
	for _, c := range clusters {
		for i := range f.unpinned {
			producttest.SetAvailable(t, c.env.Kube, f.ns, poolName(i), true)
		}
	}

	// A's first step halts: its gate runs on a task queue nobody polls.
	gate := &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "fleet-gate-" + prefix, Timeout: &metav1.Duration{Duration: 3 * time.Second}}
	inA := producttest.RolloutConfig(newCfg, false, gate, producttest.Step(1, false, 0), producttest.Step(100, true, 0))
	inB := producttest.RolloutConfig(newCfg, false, nil, producttest.Step(1, false, 0), producttest.Step(100, true, 0))
	inB.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: []string{string(a.id())}}
	producttest.CreateAfterOthers(t, b.env.Kube, inB)
	producttest.CreateAfterOthers(t, a.env.Kube, inA)

	// nothingMovedInB: local-2 admitted and moved no pool.
	nothingMovedInB := func() (bool, string) {
		on := producttest.OnConfig(t, b.env.Kube, f.ns, newCfg)
		st := rolloutOf(t, b, newCfg)
		return len(on) == 0 && (st == nil || st.Step == 0 && st.AdmittedPools == 0), fmt.Sprintf("on %s: %v; status %+v", newCfg, on, st)
	}
	// awaitingA waits until local-2 says it waits for A, with A's phase
	// there one of want, and returns the entry.
	awaitingA := func(want ...v1alpha1.RolloutPhase) v1alpha1.RolloutAwaitedCluster {
		t.Helper()
		var got v1alpha1.RolloutAwaitedCluster
		producttest.EventuallyWithin(t, settleBound, fmt.Sprintf("local-2 awaits A's rollout, %v there", want), func() (bool, string) {
			st := rolloutOf(t, b, newCfg)
			if st == nil || st.Phase != v1alpha1.RolloutAwaitingClusters || len(st.AwaitingClusters) != 1 {
				return false, fmt.Sprintf("%+v", st)
			}
			got = st.AwaitingClusters[0]
			return got.Cluster == string(a.id()) && slices.Contains(want, v1alpha1.RolloutPhase(got.Phase)), fmt.Sprintf("%+v", st)
		})
		if ok, state := nothingMovedInB(); !ok {
			t.Fatalf("local-2 moved pools while A's rollout is %s: %s", want, state)
		}
		return got
	}

	// A in progress (its rollout not started yet, or its canary moving, or
	// its gate running): local-2 waits, naming A.
	waiting := awaitingA("", v1alpha1.RolloutProgressing, v1alpha1.RolloutHalted)
	require.Contains(t, waiting.Message, fmt.Sprintf("SandboxConfig %q in cluster %q", newCfg, a.id()))
	st := rolloutOf(t, b, newCfg)
	require.Contains(t, st.Message, fmt.Sprintf("waiting before step 1 for the rollout of SandboxConfig %q to complete in 1 of the 1 clusters of spec.rollout.after", newCfg))

	// A halts: local-2 keeps waiting and says why.
	halted := awaitingA(v1alpha1.RolloutHalted)
	require.Contains(t, halted.Message, "is Halted at step 1: step 1: gate workflow CheckSandboxes on task queue "+gate.TaskQueue+" did not finish within 3s")
	producttest.RequireStays(t, 3*time.Second, "local-2 holds while A is halted", nothingMovedInB)

	// A goes on without its gate, and completes: local-2 follows.
	var cfg v1alpha1.SandboxConfig
	require.NoError(t, a.env.Kube.Get(ctx, client.ObjectKey{Name: newCfg}, &cfg))
	cfg.Spec.Rollout.Gate = nil
	require.NoError(t, a.env.Kube.Update(ctx, &cfg))
	producttest.RequestResume(t, a.env.Kube, newCfg, "fleet-1")
	completed := func(c *cluster) {
		producttest.EventuallyWithin(t, settleBound, fmt.Sprintf("the rollout of %s in %s completes", newCfg, c), func() (bool, string) {
			st := rolloutOf(t, c, newCfg)
			return st != nil && st.Phase == v1alpha1.RolloutCompleted, fmt.Sprintf("%+v", st)
		})
	}
	completed(a)
	began := time.Now()
	completed(b)
	t.Logf("local-2's rollout completed %s after A's", time.Since(began).Round(time.Millisecond))
	require.Empty(t, rolloutOf(t, b, newCfg).AwaitingClusters, "no cluster awaited once it went on")
	want := map[string]string{f.pinned: f.pin}
	for i := range f.unpinned {
		want[poolName(i)] = newCfg
	}
	waitSettled(t, time.Now(), map[*cluster]map[string]string{a: want, b: want}, f.ns)

	// The wave was told as it happened: local-2's events say it went on
	// after waiting.
	require.True(t, strings.Contains(strings.Join(configEvents(t, b, newCfg), "\n"), "(it was AwaitingClusters): taking step 1"),
		"local-2's events: %q", configEvents(t, b, newCfg))
}

// rolloutOf is a config's status.rollout in a cluster (nil: none yet).
func rolloutOf(t testing.TB, c *cluster, config string) *v1alpha1.RolloutStatus {
	t.Helper()
	var cfg v1alpha1.SandboxConfig
	require.NoError(t, c.env.Kube.Get(context.Background(), client.ObjectKey{Name: config}, &cfg), "%s", c)
	return cfg.Status.Rollout
}

// configEvents are the events about a config in a cluster.
func configEvents(t testing.TB, c *cluster, config string) []string {
	t.Helper()
	p := &producttest.Product{Env: c.env, Clientset: c.cs}
	return p.ConfigEvents(t, config)
}
