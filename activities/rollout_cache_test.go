package activities

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/cached"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/notify"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/testenv"
)

// The rollout's reads on a real kube-apiserver and a real informer cache
// built as the worker builds its own (cached.WorkerPool, poolwatch.Index).

// startCache starts an informer cache of the test server as the worker's.
func startCache(t *testing.T, env *testenv.Env) cache.Cache {
	t.Helper()
	return startCacheNotifying(t, env, nil)
}

// startCacheNotifying is startCache whose WorkerPool informer feeds n, as
// the worker's feeds Activities.PoolEvents (none when n is nil).
func startCacheNotifying(t *testing.T, env *testenv.Env, n *notify.Notifier) cache.Cache {
	t.Helper()
	c, err := cache.New(env.RestConfig, cache.Options{Scheme: env.Scheme, DefaultTransform: cached.StripUnread,
		ByObject: map[ctrlclient.Object]cache.ByObject{&v1alpha1.WorkerPool{}: {Transform: cached.WorkerPool}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, poolwatch.Index(ctx, c))
	if n != nil {
		informer, err := c.GetInformer(ctx, &v1alpha1.WorkerPool{})
		require.NoError(t, err)
		_, err = informer.AddEventHandler(poolwatch.NotifyClasses(n))
		require.NoError(t, err)
	}
	go func() { _ = c.Start(ctx) }()
	require.True(t, c.WaitForCacheSync(ctx))
	return c
}

// liveCount counts what the activities ask the API server.
type liveCount struct {
	mu                          sync.Mutex
	Lists, PoolGets, ConfigGets int
	pools                       map[string]int // GETs per pool, "namespace/name"
}

func (n *liveCount) snapshot() (lists, poolGets, configGets int, perPool map[string]int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	perPool = map[string]int{}
	for k, v := range n.pools {
		perPool[k] = v
	}
	return n.Lists, n.PoolGets, n.ConfigGets, perPool
}

// countingLive is a live client of the test server counting every List
// (of any kind) and the GETs of pools and configs.
func countingLive(t *testing.T, env *testenv.Env) (ctrlclient.WithWatch, *liveCount) {
	t.Helper()
	live, err := ctrlclient.NewWithWatch(env.RestConfig, ctrlclient.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	n := &liveCount{pools: map[string]int{}}
	return interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			n.mu.Lock()
			switch obj.(type) {
			case *v1alpha1.WorkerPool:
				n.PoolGets++
				n.pools[key.String()]++
			case *v1alpha1.SandboxConfig:
				n.ConfigGets++
			}
			n.mu.Unlock()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c ctrlclient.WithWatch, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
			n.mu.Lock()
			n.Lists++
			n.mu.Unlock()
			return c.List(ctx, list, opts...)
		},
	}), n
}

// rolloutWorld is a test's objects on the server: its configs (prefix-old,
// the class default the pools are on, and prefix-new, a newer default
// rolling out with the given steps) and its pools in namespace ns, all
// removed when the test ends (envtest runs no namespace controller).
type rolloutWorld struct {
	t      *testing.T
	env    *testenv.Env
	ns     string
	old    string
	config *v1alpha1.SandboxConfig
}

func newRolloutWorld(t *testing.T, env *testenv.Env, steps ...v1alpha1.RolloutStep) *rolloutWorld {
	t.Helper()
	w := &rolloutWorld{t: t, env: env, ns: env.Namespace(t)}
	prefix := testenv.UniqueName(t)
	w.old = prefix + "-old"
	ctx := context.Background()
	t.Cleanup(func() {
		_ = env.Kube.DeleteAllOf(context.Background(), &v1alpha1.WorkerPool{}, ctrlclient.InNamespace(w.ns))
		for _, name := range []string{prefix + "-old", prefix + "-new"} {
			_ = ctrlclient.IgnoreNotFound(env.Kube.Delete(context.Background(), &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		}
	})
	require.NoError(t, env.Kube.Create(ctx, gvisorDefault(w.old)))
	w.config = gvisorDefault(prefix + "-new")
	w.config.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: steps}
	createNewest(t, env.Kube, w.config)
	return w
}

// gvisorDefault is a valid gvisor config annotated as the class default.
func gvisorDefault(name string) *v1alpha1.SandboxConfig {
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   gvisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@sha256:" + strings.Repeat("a", 64),
				Assets: map[string]map[string]v1alpha1.SandboxAsset{"amd64": {"gvisor": {
					URL: "https://assets.example/gvisor.tar.zstd", SHA256: strings.Repeat("b", 64)}}},
			}},
		},
	}
}

// createNewest creates c a whole second after every config there is:
// creation timestamps have one-second resolution, and c must be the newest
// default without the name's tie-break.
func createNewest(t *testing.T, kube ctrlclient.Client, c *v1alpha1.SandboxConfig) {
	t.Helper()
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, kube.List(context.Background(), &configs))
	var newest time.Time
	for _, o := range configs.Items {
		if ts := o.CreationTimestamp.Time; ts.After(newest) {
			newest = ts
		}
	}
	for !time.Now().Truncate(time.Second).After(newest) {
		time.Sleep(20 * time.Millisecond) // a clock boundary, not synchronisation
	}
	require.NoError(t, kube.Create(context.Background(), c))
}

// pool creates a pool of the test's namespace with the given classes
// (an empty configRef: unpinned) on old, Available.
func (w *rolloutWorld) pool(name string, classes ...v1alpha1.WorkerPoolSandboxClass) {
	w.t.Helper()
	if len(classes) == 0 {
		classes = []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}
	}
	wp := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{Replicas: ptr.To[int32](0), WorkerImage: "ateworker:v1", SandboxClasses: classes}}
	require.NoError(w.t, w.env.Kube.Create(context.Background(), wp))
	w.setPool(name, w.old, true)
}

// setPool writes a pool's status as its switch and keeper would: every
// class on config, Available or not.
func (w *rolloutWorld) setPool(name, config string, available bool) {
	w.t.Helper()
	ctx := context.Background()
	var wp v1alpha1.WorkerPool
	require.NoError(w.t, w.env.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: w.ns, Name: name}, &wp))
	wp.Status.SandboxClasses = nil
	for _, c := range wp.Spec.SandboxClasses {
		wp.Status.SandboxClasses = append(wp.Status.SandboxClasses, v1alpha1.WorkerPoolSandboxClassStatus{
			Name: c.Name, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config}})
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "ready"}
	if !available {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "WorkersNotReady", "0 of 1 workers ready"
	}
	meta.SetStatusCondition(&wp.Status.Conditions, cond)
	require.NoError(w.t, w.env.Kube.Status().Update(ctx, &wp))
}

// key is a pool's "namespace/name".
func (w *rolloutWorld) key(name string) string { return w.ns + "/" + name }

// seen waits until the cache shows the pool at the API server's state.
func (w *rolloutWorld) seen(c ctrlclient.Reader, name string) {
	w.t.Helper()
	var live v1alpha1.WorkerPool
	require.NoError(w.t, w.env.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: w.ns, Name: name}, &live))
	require.Eventually(w.t, func() bool {
		var got v1alpha1.WorkerPool
		return c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: w.ns, Name: name}, &got) == nil && got.ResourceVersion == live.ResourceVersion
	}, 10*time.Second, 10*time.Millisecond, "the cache shows %s at %s", name, live.ResourceVersion)
}

// listRecorder passes reads to a cache and records how many pools each
// List handed over, and with which field selector.
type listRecorder struct {
	ctrlclient.Reader
	handed []int
	fields []string
}

func (r *listRecorder) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	err := r.Reader.List(ctx, list, opts...)
	if pools, ok := list.(*v1alpha1.WorkerPoolList); ok && err == nil {
		lo := (&ctrlclient.ListOptions{}).ApplyOptions(opts)
		r.handed = append(r.handed, len(pools.Items))
		sel := ""
		if lo.FieldSelector != nil {
			sel = lo.FieldSelector.String()
		}
		r.fields = append(r.fields, sel)
	}
	return err
}

// TestClassPoolsReadsOnlyTheClassesUnpinnedPools (issue 47): the rollout's
// pools come from the worker's cache through its index: a list hands over
// the class's unpinned pools and no other (not the pinned ones, not
// another class's), so a look at a class costs that class, not the fleet.
// A reader without the index is refused, not scanned: the API server
// itself has no such field.
func TestClassPoolsReadsOnlyTheClassesUnpinnedPools(t *testing.T) {
	env := realKube(t)
	w := newRolloutWorld(t, env, v1alpha1.RolloutStep{Percent: ptr.To[int32](100)})
	unpinned := []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}
	pinned := []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: w.old}}}
	microvm := []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassMicroVM}}
	for _, p := range []struct {
		name    string
		classes []v1alpha1.WorkerPoolSandboxClass
	}{{"u1", unpinned}, {"u2", unpinned}, {"u3", unpinned}, {"p1", pinned}, {"p2", pinned}, {"m1", microvm}, {"m2", microvm}} {
		w.pool(p.name, p.classes...)
	}
	c := startCache(t, env)
	for _, name := range []string{"u1", "u2", "u3", "p1", "p2", "m1", "m2"} {
		w.seen(c, name)
	}
	ctx := context.Background()
	for class, want := range map[v1alpha1.SandboxClass][]string{gvisor: {"u1", "u2", "u3"}, v1alpha1.SandboxClassMicroVM: {"m1", "m2"}} {
		rec := &listRecorder{Reader: c}
		pools, err := poolwatch.ClassPools(ctx, rec, class)
		require.NoError(t, err)
		var got []string
		for _, p := range pools {
			got = append(got, p.Key.Name)
			require.Equal(t, w.old, p.Current)
			require.NotEmpty(t, p.ResourceVersion)
		}
		require.Equal(t, want, got, "the class's unpinned pools, in rollout order")
		require.Equal(t, []int{len(want)}, rec.handed, "one list, handing over the class's unpinned pools only, of the 7")
		require.Equal(t, []string{poolwatch.UnpinnedClassIndex + "=" + string(class)}, rec.fields)
	}

	live, n := countingLive(t, env)
	_, err := poolwatch.ClassPools(ctx, live, gvisor)
	require.ErrorContains(t, err, poolwatch.UnpinnedClassIndex, "the API server has no such field: no silent fleet-wide list")
	require.Equal(t, 1, n.Lists)
}

// admitStep admits step 1 of w's rollout and returns what it admitted.
func admitStep(t *testing.T, a *Activities, w *rolloutWorld, step int32) *Admitted {
	t.Helper()
	adm, err := a.AdmitRolloutStep(context.Background(), AdmitInput{Config: w.config.Name, Step: step, WorkflowID: "w", UID: w.config.UID})
	require.NoError(t, err)
	require.False(t, adm.Gone)
	return adm
}

// waitInBackground runs WaitRolloutStep for step 1 until it returns or the
// test ends.
func waitInBackground(t *testing.T, a *Activities, w *rolloutWorld) <-chan *StepWait {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan *StepWait, 1)
	now := time.Now()
	go func() {
		res, err := a.WaitRolloutStep(ctx, WaitInput{Config: w.config.Name, UID: w.config.UID, Step: 1, Since: now, Deadline: now.Add(time.Hour)})
		if err != nil {
			res = &StepWait{Outcome: "error: " + err.Error()}
		}
		done <- res
	}()
	return done
}

// staleCache is the worker's cache but for one pool, which it shows as
// frozen (a state the API server no longer has) until thawed.
type staleCache struct {
	ctrlclient.Reader
	mu     sync.Mutex
	frozen *v1alpha1.WorkerPool
}

func (s *staleCache) thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = nil
}

func (s *staleCache) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if err := s.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pools, ok := list.(*v1alpha1.WorkerPoolList); ok && s.frozen != nil {
		for i := range pools.Items {
			if pools.Items[i].Namespace == s.frozen.Namespace && pools.Items[i].Name == s.frozen.Name {
				pools.Items[i] = *s.frozen.DeepCopy()
			}
		}
	}
	return nil
}

// TestAStepWaitsForTheAPIServerNotTheCache (issue 47): the cache shows an
// admitted pool on the config and Available, the API server says it is not
// Available: the step waits, asking the API server about that pool once
// (not once a poll) while the cache shows it unchanged. Once the API server
// has it Available and the cache has caught up, the step is done. Nothing
// is listed on the API server all along; each admitted pool is read live
// once per state the cache calls ready.
func TestAStepWaitsForTheAPIServerNotTheCache(t *testing.T) {
	env := realKube(t)
	w := newRolloutWorld(t, env, v1alpha1.RolloutStep{Pools: ptr.To[int32](2)}, v1alpha1.RolloutStep{Percent: ptr.To[int32](100)})
	for _, name := range []string{"a", "b", "c", "d"} {
		w.pool(name)
	}
	informer := startCache(t, env)
	for _, name := range []string{"a", "b", "c", "d"} {
		w.seen(informer, name)
	}
	stale := &staleCache{Reader: informer}
	live, n := countingLive(t, env)
	a := &Activities{Live: live, Cache: stale}
	adm := admitStep(t, a, w, 1)
	require.Equal(t, []string{w.key("a"), w.key("b")}, adm.Pools)

	// Both moved; b's workers are not ready, but the cache shows b ready.
	w.setPool("a", w.config.Name, true)
	w.setPool("b", w.config.Name, false)
	w.seen(informer, "a")
	w.seen(informer, "b")
	var b v1alpha1.WorkerPool
	require.NoError(t, informer.Get(context.Background(), ctrlclient.ObjectKey{Namespace: w.ns, Name: "b"}, &b))
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "Stale", Message: "a state the API server no longer has"})
	stale.frozen = &b

	listsBefore, _, _, _ := n.snapshot()
	done := waitInBackground(t, a, w)
	select {
	case res := <-done:
		t.Fatalf("the step ended while the API server has b not Available: %+v", res)
	case <-time.After(3500 * time.Millisecond):
	}
	lists, poolGets, configGets, perPool := n.snapshot()
	t.Logf("after 3.5 s of the wait: %d lists, %d pool GETs %v, %d config GETs", lists-listsBefore, poolGets, perPool, configGets)
	require.Equal(t, listsBefore, lists, "no LIST while the step waits")
	require.Equal(t, map[string]int{w.key("a"): 1, w.key("b"): 1}, perPool,
		"each admitted pool the cache calls ready read live once; b not again while the cache shows it unchanged")
	var st v1alpha1.SandboxConfig
	require.NoError(t, env.Kube.Get(context.Background(), ctrlclient.ObjectKey{Name: w.config.Name}, &st))
	require.Equal(t, int32(1), st.Status.Rollout.Step)
	require.Equal(t, []int32{2, 2, 4}, []int32{st.Status.Rollout.AdmittedPools, st.Status.Rollout.MovedPools, st.Status.Rollout.TotalPools}, "the counts, from the cache")

	// The API server has b Available, the cache catches up: done.
	w.setPool("b", w.config.Name, true)
	stale.thaw()
	select {
	case res := <-done:
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
	case <-time.After(10 * time.Second):
		t.Fatal("the step did not end once the API server and the cache show b Available")
	}
	lists, _, _, perPool = n.snapshot()
	require.Equal(t, listsBefore, lists, "no LIST while the step waits")
	require.Equal(t, map[string]int{w.key("a"): 1, w.key("b"): 2}, perPool, "b read again once, at its new state")
}

// TestAStepsWaitListsNothing (issue 47): a wait of several seconds for a
// step whose pools are not all there makes no LIST; it reads each admitted
// pool live once as the cache shows it ready, not again while the wait goes
// on, and none while the cache shows it waiting; once the last is there,
// that one, so that each admitted pool was read live exactly once, and no
// other pool.
func TestAStepsWaitListsNothing(t *testing.T) {
	env := realKube(t)
	w := newRolloutWorld(t, env, v1alpha1.RolloutStep{Pools: ptr.To[int32](3)}, v1alpha1.RolloutStep{Percent: ptr.To[int32](100)})
	names := []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	for _, name := range names {
		w.pool(name)
	}
	c := startCache(t, env)
	for _, name := range names {
		w.seen(c, name)
	}
	live, n := countingLive(t, env)
	a := &Activities{Live: live, Cache: c}
	lists0, _, _, _ := n.snapshot()
	adm := admitStep(t, a, w, 1)
	require.Equal(t, []string{w.key("p0"), w.key("p1"), w.key("p2")}, adm.Pools)
	w.setPool("p0", w.config.Name, true)
	w.setPool("p1", w.config.Name, true)
	w.setPool("p2", w.config.Name, false)

	start := time.Now()
	done := waitInBackground(t, a, w)
	select {
	case res := <-done:
		t.Fatalf("the step ended with p2 not Available: %+v", res)
	case <-time.After(4 * time.Second):
	}
	lists, poolGets, configGets, perPool := n.snapshot()
	t.Logf("%s of the wait: %d lists, %d pool GETs, %d config GETs", time.Since(start).Round(time.Millisecond), lists-lists0, poolGets, configGets)
	require.Equal(t, lists0, lists, "no LIST, neither by the admission nor by the wait")
	require.Equal(t, 2, poolGets, "the two pools the cache shows ready read live once each, p2 not while it waits: %v", perPool)
	require.Equal(t, map[string]int{w.key("p0"): 1, w.key("p1"): 1}, perPool)
	require.LessOrEqual(t, configGets, 8, "the rolling config, one GET per poll (and the admission's)")

	w.setPool("p2", w.config.Name, true)
	select {
	case res := <-done:
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
	case <-time.After(10 * time.Second):
		t.Fatal("the step did not end once every admitted pool is Available")
	}
	lists, _, _, perPool = n.snapshot()
	require.Equal(t, lists0, lists, "no LIST")
	require.Equal(t, map[string]int{w.key("p0"): 1, w.key("p1"): 1, w.key("p2"): 1}, perPool, "each admitted pool read live once, no other pool")
}

// looksCounter passes reads to a cache and counts the lists of pools: one
// per look of a step's wait.
type looksCounter struct {
	ctrlclient.Reader
	looks atomic.Int64
}

func (r *looksCounter) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if _, ok := list.(*v1alpha1.WorkerPoolList); ok {
		r.looks.Add(1)
	}
	return r.Reader.List(ctx, list, opts...)
}

// wokenWorld is a rollout of a first step of two pools over pools a, b
// and c (all on old), seen by a cache whose pool events wake the
// activities, which read live through a counting client. Their poll is an
// hour: every look after a first is woken by an event.
func wokenWorld(t *testing.T) (*rolloutWorld, cache.Cache, *liveCount, *Activities) {
	t.Helper()
	env := realKube(t)
	w := newRolloutWorld(t, env, v1alpha1.RolloutStep{Pools: ptr.To[int32](2)}, v1alpha1.RolloutStep{Percent: ptr.To[int32](100)})
	names := []string{"a", "b", "c"}
	for _, name := range names {
		w.pool(name)
	}
	events := &notify.Notifier{}
	informer := startCacheNotifying(t, env, events)
	for _, name := range names {
		w.seen(informer, name)
	}
	live, n := countingLive(t, env)
	a := &Activities{Live: live, Cache: informer, PoolEvents: events, rolloutPoll: time.Hour}
	return w, informer, n, a
}

// TestAStepsWaitWakesOnItsPools (issue 47): with the worker's pool events
// wired (Activities.PoolEvents, fed by the informer as the worker's is), a
// step's wait looks when its class's pools change. Its poll is an hour
// here, so every look after its first is woken by an event: one reads the
// first admitted pool live once the cache shows it ready, while the second
// still waits, and one ends the step once the second is ready. Each
// admitted pool is read live once, nothing is listed.
func TestAStepsWaitWakesOnItsPools(t *testing.T) {
	w, informer, n, a := wokenWorld(t)
	adm := admitStep(t, a, w, 1)
	require.Equal(t, []string{w.key("a"), w.key("b")}, adm.Pools)
	lists0, _, _, _ := n.snapshot()
	counter := &looksCounter{Reader: informer}
	a.Cache = counter

	done := waitInBackground(t, a, w)
	require.Eventually(t, func() bool { return counter.looks.Load() == 1 }, 10*time.Second, 10*time.Millisecond, "the wait's first look")
	_, _, _, perPool := n.snapshot()
	require.Empty(t, perPool, "no admitted pool ready at the first look")

	// a ready: read live at once, b still waiting.
	w.setPool("a", w.config.Name, true)
	w.setPool("b", w.config.Name, false)
	require.Eventually(t, func() bool {
		_, _, _, perPool := n.snapshot()
		return perPool[w.key("a")] == 1
	}, 10*time.Second, 10*time.Millisecond, "a read live once the cache shows it ready (the wait's poll is an hour: woken by a's event)")
	require.GreaterOrEqual(t, counter.looks.Load(), int64(2), "a look after the first, woken by an event")
	_, _, _, perPool = n.snapshot()
	require.Equal(t, map[string]int{w.key("a"): 1}, perPool, "a read before b is ready; b not while it waits")
	select {
	case res := <-done:
		t.Fatalf("the step ended with b not Available: %+v", res)
	default:
	}

	// b ready: the step ends, on b's event.
	w.setPool("b", w.config.Name, true)
	select {
	case res := <-done:
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
	case <-time.After(10 * time.Second): // a bound, not synchronisation: the poll is an hour
		t.Fatal("the step did not end on b's event")
	}
	lists, _, _, perPool := n.snapshot()
	t.Logf("the wait's looks: %d", counter.looks.Load())
	require.Equal(t, lists0, lists, "no LIST")
	require.Equal(t, map[string]int{w.key("a"): 1, w.key("b"): 1}, perPool, "each admitted pool read live once, no other pool")
}

// TestALookAsksAtMostItsShareOfPools: a step whose pools, more than one
// look may ask about (rolloutAskPerLook), are all ready at once is read in
// parts: the first look asks rolloutAskPerLook of them and says there is
// more, the next asks the rest and ends the step; no pool is asked twice.
// The wait itself looks again at once, not at its next poll.
func TestALookAsksAtMostItsShareOfPools(t *testing.T) {
	ctx := context.Background()
	total := rolloutAskPerLook + rolloutAskPerLook/4
	fixture := func(t *testing.T) (*Activities, *atomic.Int64) {
		t.Helper()
		newCfg := gvisorDefault("new")
		newCfg.UID, newCfg.CreationTimestamp = "uid-new", metav1.Unix(200, 0)
		newCfg.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Percent: ptr.To[int32](100)}}}
		oldCfg := gvisorDefault("old")
		oldCfg.CreationTimestamp = metav1.Unix(100, 0)
		objs := []ctrlclient.Object{oldCfg, newCfg}
		for i := range total {
			wp := poolOn(fmt.Sprintf("p%04d", i), "old")
			wp.Spec.SandboxClasses = []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}
			objs = append(objs, wp)
		}
		store := indexedStore(t, fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
			WithStatusSubresource(&v1alpha1.SandboxConfig{}, &v1alpha1.WorkerPool{}))
		var gets atomic.Int64 // askPools' GETs run rolloutConfirmConcurrency at once
		live := interceptor.NewClient(store, interceptor.Funcs{Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			if _, ok := obj.(*v1alpha1.WorkerPool); ok {
				gets.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		}})
		a := &Activities{Live: live, Cache: store}
		adm, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
		require.NoError(t, err)
		require.Equal(t, total, adm.Admitted)
		for i := range total {
			name := fmt.Sprintf("p%04d", i)
			movePool(t, store, name, "new")
			setAvailable(t, store, name, metav1.ConditionTrue)
		}
		return a, &gets
	}
	in := WaitInput{Config: "new", UID: "uid-new", Step: 1, Since: time.Now().Add(-time.Minute), Deadline: time.Now().Add(time.Hour)}

	t.Run("two looks", func(t *testing.T) {
		a, gets := fixture(t)
		w := &stepWatch{cache: a.Cache, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
		res, err := a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Empty(t, res.Outcome, "%+v", res)
		require.True(t, res.more)
		require.EqualValues(t, rolloutAskPerLook, gets.Load())
		res, err = a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
		require.False(t, res.more)
		require.EqualValues(t, total, gets.Load(), "each pool asked once")
	})
	t.Run("the wait", func(t *testing.T) {
		a, gets := fixture(t)
		a.rolloutPoll = time.Hour
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound: the poll is an hour
		defer cancel()
		res, err := a.WaitRolloutStep(wctx, in)
		require.NoError(t, err, "the wait looks again at once while pools are left to ask")
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
		require.EqualValues(t, total, gets.Load())
	})
}

// TestRolloutActivitiesNeedTheCache: built without the worker's cache, the
// rollout's activities fail at once and for good, naming it; they never
// list the fleet live instead.
func TestRolloutActivitiesNeedTheCache(t *testing.T) {
	a, _ := rolloutFixture(t, nil, nil)
	a.Cache = nil
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"LookAtRollout": func() error { _, err := a.LookAtRollout(ctx, LookInput{Config: "new", Done: -1}); return err },
		"AdmitRolloutStep": func() error {
			_, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, UID: "uid-new"})
			return err
		},
		"WaitRolloutStep": func() error {
			_, err := a.WaitRolloutStep(ctx, WaitInput{Config: "new", UID: "uid-new", Step: 1, Deadline: time.Now().Add(time.Hour)})
			return err
		},
		"SetRolloutStatus": func() error {
			return a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", Phase: v1alpha1.RolloutPaused})
		},
	} {
		err := call()
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, name)
		require.Equal(t, ErrNoCache, app.Type(), name)
		require.True(t, app.NonRetryable(), name)
		require.Contains(t, err.Error(), "Activities.Cache", name)
	}
}

// splitFixture is rolloutFixture with a cache of its own: a second store
// that starts as the API server's copy and is then changed apart from it,
// as a cache that lags would show.
func splitFixture(t *testing.T) (a *Activities, live, cacheStore ctrlclient.Client) {
	t.Helper()
	a, store := rolloutFixture(t, nil, nil)
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, store.List(context.Background(), &configs))
	var pools v1alpha1.WorkerPoolList
	require.NoError(t, store.List(context.Background(), &pools))
	var objs []ctrlclient.Object
	for i := range configs.Items {
		objs = append(objs, &configs.Items[i])
	}
	for i := range pools.Items {
		objs = append(objs, &pools.Items[i])
	}
	for _, o := range objs {
		o.SetResourceVersion("")
	}
	c := indexedStore(t, fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.SandboxConfig{}, &v1alpha1.WorkerPool{}))
	a.Cache = c
	return a, store, c
}

// setAvailable writes a pool's Available condition in c.
func setAvailable(t *testing.T, c ctrlclient.Client, name string, status metav1.ConditionStatus) {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: name}, &wp))
	meta.SetStatusCondition(&wp.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: status, Reason: "R", Message: "m"})
	require.NoError(t, c.Status().Update(context.Background(), &wp))
}

// setFailing writes a SwitchStepFailing condition on a pool's class in c.
func setFailing(t *testing.T, c ctrlclient.Client, name string) {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: name}, &wp))
	meta.SetStatusCondition(&wp.Status.SandboxClasses[0].Conditions, metav1.Condition{Type: v1alpha1.ConditionSwitchStepFailing,
		Status: metav1.ConditionTrue, Reason: "ClaimFailed", Message: "boom", LastTransitionTime: metav1.Now()})
	require.NoError(t, c.Status().Update(context.Background(), &wp))
}

// TestAStepHaltsOnlyOnWhatTheAPIServerSays: a cache that lags may show a
// switch failing that the API server has since seen through, or a pool
// still waiting at the deadline that the API server has on the config and
// Available. Neither halts the step: a halt, as a step's end, is decided on
// a live read of the pool.
func TestAStepHaltsOnlyOnWhatTheAPIServerSays(t *testing.T) {
	ctx := context.Background()
	t.Run("a failing switch the API server no longer shows", func(t *testing.T) {
		a, live, cacheStore := splitFixture(t)
		n := 0
		a.Live = interceptor.NewClient(a.Live, interceptor.Funcs{Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			if _, ok := obj.(*v1alpha1.WorkerPool); ok {
				n++
			}
			return c.Get(ctx, key, obj, opts...)
		}})
		adm, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
		require.NoError(t, err)
		require.Equal(t, []string{"ns/c"}, adm.Pools)
		// The cache shows c's switch failing; the API server has it
		// retried, still moving.
		setFailing(t, cacheStore, "c")
		w := &stepWatch{cache: a.Cache, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
		in := WaitInput{Config: "new", UID: "uid-new", Step: 1, Since: time.Now().Add(-time.Minute), Deadline: time.Now().Add(time.Hour)}
		for range 3 {
			res, err := a.lookAtStep(ctx, in, w)
			require.NoError(t, err)
			require.Empty(t, res.Outcome, "no halt on the cache's word: %+v", res)
		}
		require.Equal(t, 1, n, "asked once while the cache shows it unchanged")
		// The API server has it there; the cache, unchanged, is not
		// believed over the last answer...
		movePool(t, live, "c", "new")
		setAvailable(t, live, "c", metav1.ConditionTrue)
		res, err := a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Empty(t, res.Outcome, "%+v", res)
		// ...until it shows another state: then it is asked again.
		setAvailable(t, cacheStore, "c", metav1.ConditionTrue)
		res, err = a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Equal(t, StepReady, res.Outcome, "%+v", res)
		require.Equal(t, 2, n)
	})
	t.Run("a failing switch the API server shows too", func(t *testing.T) {
		a, live, cacheStore := splitFixture(t)
		_, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
		require.NoError(t, err)
		setFailing(t, live, "c")
		setFailing(t, cacheStore, "c")
		w := &stepWatch{cache: a.Cache, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
		res, err := a.lookAtStep(ctx, WaitInput{Config: "new", UID: "uid-new", Step: 1, Since: time.Now().Add(-time.Minute), Deadline: time.Now().Add(time.Hour)}, w)
		require.NoError(t, err)
		require.Equal(t, StepHalted, res.Outcome, "%+v", res)
		require.Equal(t, "ns/c", res.Pool)
		require.Contains(t, res.Message, "ClaimFailed: boom")
	})
	t.Run("the deadline with a pool the cache shows waiting", func(t *testing.T) {
		a, live, _ := splitFixture(t)
		_, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
		require.NoError(t, err)
		movePool(t, live, "c", "new")
		setAvailable(t, live, "c", metav1.ConditionTrue)
		w := &stepWatch{cache: a.Cache, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
		in := WaitInput{Config: "new", UID: "uid-new", Step: 1, Since: time.Now().Add(-time.Hour), Deadline: time.Now().Add(-time.Second)}
		res, err := a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Equal(t, StepReady, res.Outcome, "the API server has it there: no halt, the step is done: %+v", res)
	})
	t.Run("the deadline with a pool the API server shows waiting", func(t *testing.T) {
		a, _, _ := splitFixture(t)
		_, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
		require.NoError(t, err)
		w := &stepWatch{cache: a.Cache, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
		in := WaitInput{Config: "new", UID: "uid-new", Step: 1, Since: time.Now().Add(-time.Hour), Deadline: time.Now().Add(-time.Second)}
		res, err := a.lookAtStep(ctx, in, w)
		require.NoError(t, err)
		require.Equal(t, StepHalted, res.Outcome, "%+v", res)
		require.Contains(t, res.Message, `WorkerPool ns/c has not moved to SandboxConfig "new"`)
	})
}

// TestALookEndsOnlyOnANewerDefaultTheAPIServerHas: the cache still shows a
// newer default the API server no longer has (deleted a moment ago): the
// rollout is not ended as superseded by it. One the API server has ends it.
func TestALookEndsOnlyOnANewerDefaultTheAPIServerHas(t *testing.T) {
	ctx := context.Background()
	newer := gvisorDefault("newer")
	newer.CreationTimestamp = metav1.Unix(300, 0)

	a, live, cacheStore := splitFixture(t)
	require.NoError(t, cacheStore.Create(ctx, newer.DeepCopy()))
	look, err := a.LookAtRollout(ctx, LookInput{Config: "new", Done: -1})
	require.NoError(t, err)
	require.Empty(t, look.Stop, "a newer default only the cache shows: %+v", look)
	require.Equal(t, rollout.Take, look.Verdict.Action)

	require.NoError(t, live.Create(ctx, newer.DeepCopy()))
	look, err = a.LookAtRollout(ctx, LookInput{Config: "new", Done: -1})
	require.NoError(t, err)
	require.Equal(t, v1alpha1.RolloutSuperseded, look.Stop, "%+v", look)
}
