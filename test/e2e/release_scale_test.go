package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// crowdedPools is how many pools use the config of TestReleaseOfAConfigUnderManyPools.
const crowdedPools = 5000

// laggingCache is the worker's informer cache, or, once lagging, a cache
// that has seen no pool yet: the release's first look then misses, and the
// live list decides.
type laggingCache struct {
	ctrlclient.Reader
	lagging atomic.Bool
}

func (c *laggingCache) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if _, ok := list.(*v1alpha1.WorkerPoolList); ok && c.lagging.Load() {
		return nil
	}
	return c.Reader.List(ctx, list, opts...)
}

// TestReleaseOfAConfigUnderManyPools: a config that 5000 pools use is
// deleted. Its release waits, through its cache look and through its live
// list (10 pages), and the history records how many pools and a sample of
// them, not 5000 keys; once the pools move off, it is released. The
// product's workflows and activities run on a worker of the test's, against
// the real API server and Temporal, without the pool keeper (which would
// keep 5000 Deployments): the test writes the pools' status as switches
// would.
func TestReleaseOfAConfigUnderManyPools(t *testing.T) {
	env := testenv.Current()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)
	tq := testenv.TaskQueue(t)
	rc := rest.CopyConfig(env.RestConfig)
	rc.QPS, rc.Burst = 2000, 4000
	live, err := kube.LiveClient(rc)
	require.NoError(t, err)
	t.Cleanup(func() {
		producttest.CleanCluster(t, env.Kube)
	})

	informers, err := cache.New(rc, cache.Options{Scheme: kube.Scheme})
	require.NoError(t, err)
	require.NoError(t, poolwatch.Index(ctx, informers))
	go func() { _ = informers.Start(ctx) }()
	require.True(t, informers.WaitForCacheSync(ctx))
	lag := &laggingCache{Reader: informers}
	acts := &activities.Activities{Live: live, Cache: lag, Temporal: env.Temporal, Scope: wfapi.ScopeOf(env.ClusterName, tq)}
	w := worker.New(env.Temporal, tq, worker.Options{})
	workflows.RegisterWorkflows(w)
	workflows.RegisterActivities(w, acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	crowded, elsewhere := producttest.GVisorConfig("crowded", false), producttest.GVisorConfig("elsewhere", false)
	for _, c := range []*v1alpha1.SandboxConfig{crowded, elsewhere} {
		c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
		require.NoError(t, live.Create(ctx, c))
	}
	began := time.Now()
	onAll := func(what string, f func(name string) error) {
		t.Helper()
		start := time.Now()
		names := make(chan string)
		errs := make(chan error, 48)
		var wg sync.WaitGroup
		for range 48 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for name := range names {
					if err := f(name); err != nil {
						errs <- fmt.Errorf("WorkerPool %s/%s: %w", ns, name, err)
						return
					}
				}
			}()
		}
	feed:
		for i := range crowdedPools {
			select {
			case names <- fmt.Sprintf("p%04d", i):
			case err := <-errs:
				errs <- err
				break feed
			}
		}
		close(names)
		wg.Wait()
		close(errs)
		require.NoError(t, <-errs, what)
		t.Logf("%s %d pools in %s", what, crowdedPools, time.Since(start).Round(time.Millisecond))
	}
	setStatus := func(name, config string) error {
		wp := &v1alpha1.WorkerPool{}
		wp.Namespace, wp.Name = ns, name
		base := wp.DeepCopy()
		wp.Status.SandboxClasses = []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config},
		}}
		return live.Status().Patch(ctx, wp, ctrlclient.MergeFrom(base))
	}
	onAll("created, on crowded,", func(name string) error {
		if err := live.Create(ctx, producttest.Pool(ns, name, "crowded")); err != nil {
			return err
		}
		return setStatus(name, "crowded")
	})
	producttest.Eventually(t, "the cache to see every pool on crowded", func() (bool, string) {
		var pools v1alpha1.WorkerPoolList
		if err := informers.List(ctx, &pools, ctrlclient.MatchingFields{poolwatch.StatusConfigIndex: "crowded"}); err != nil {
			return false, err.Error()
		}
		return len(pools.Items) == crowdedPools, fmt.Sprintf("%d pools", len(pools.Items))
	})

	require.NoError(t, live.Delete(ctx, crowded))
	require.NoError(t, wfapi.SignalRelease(ctx, env.Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, tq), "crowded"))
	id := testenv.Current().ClusterName.ReleaseWorkflowID("crowded")
	state := func() wfapi.ReleaseState {
		var s wfapi.ReleaseState
		v, err := env.Temporal.QueryWorkflow(ctx, id, "", wfapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&s))
		return s
	}
	waitChecks := func(n int) wfapi.ReleaseState {
		var s wfapi.ReleaseState
		producttest.Eventually(t, fmt.Sprintf("the release's look %d", n), func() (bool, string) {
			s = state()
			return s.Checks >= n && s.Outcome == wfapi.OutcomeWaiting, fmt.Sprintf("checks %d, outcome %q", s.Checks, s.Outcome)
		})
		return s
	}
	s := waitChecks(1)
	t.Logf("look 1 (the cache): %d checks, %d users named", s.Checks, len(s.Users))
	require.Equal(t, crowdedPools, s.UserCount, "the state counts every user")

	// The cache misses every pool: the live list, 10 pages, finds them.
	lag.lagging.Store(true)
	require.NoError(t, env.Temporal.SignalWorkflow(ctx, id, "", wfapi.SignalRecheck, nil))
	producttest.Eventually(t, "the release's live list", func() (bool, string) {
		r := usersResults(t, ctx, id)
		return len(r["Unprotect"]) > 0, fmt.Sprintf("results %v", r)
	})
	s = waitChecks(2)
	t.Logf("look 2 (the live list): %d checks, %d users named", s.Checks, len(s.Users))
	require.Equal(t, crowdedPools, s.UserCount, "the state counts every user")
	require.Len(t, s.Users, activities.UserSampleSize, "and names a sample")
	require.NoError(t, live.Get(ctx, ctrlclient.ObjectKeyFromObject(crowded), crowded))
	require.Contains(t, crowded.Finalizers, v1alpha1.ProtectionFinalizer, "held while 5000 pools use it")

	// The history carries how many users there are and a sample, not
	// every key: each users result is small.
	results := usersResults(t, ctx, id)
	require.Contains(t, results, "CachedUsers")
	require.Contains(t, results, "Unprotect")
	for typ, sizes := range results {
		for _, n := range sizes {
			require.Lessf(t, n, 2048, "%s recorded a %d-byte result for %d users", typ, n, crowdedPools)
		}
	}

	// The pools move off; the last look finds none and releases.
	onAll("moved to elsewhere", func(name string) error { return setStatus(name, "elsewhere") })
	require.NoError(t, env.Temporal.SignalWorkflow(ctx, id, "", wfapi.SignalRecheck, nil))
	producttest.Eventually(t, "crowded released", func() (bool, string) {
		err := live.Get(ctx, ctrlclient.ObjectKeyFromObject(crowded), crowded)
		return err != nil, fmt.Sprintf("finalizers %v, err %v", crowded.Finalizers, err)
	})
	var outcome string
	require.NoError(t, env.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &outcome))
	require.Equal(t, wfapi.OutcomeReleased, outcome)
	t.Logf("the whole test took %s", time.Since(began).Round(time.Millisecond))
}

// usersResults returns, per activity type (CachedUsers, Unprotect), the
// sizes of the results the release workflow's history recorded.
func usersResults(t *testing.T, ctx context.Context, id string) map[string][]int {
	t.Helper()
	scheduled := map[int64]string{}
	out := map[string][]int{}
	it := testenv.Current().Temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			typ := scheduled[a.GetScheduledEventId()]
			if typ != "CachedUsers" && typ != "Unprotect" {
				continue
			}
			n := 0
			for _, p := range a.GetResult().GetPayloads() {
				n += len(p.GetData())
			}
			out[typ] = append(out[typ], n)
		}
	}
	return out
}
