package crashtest

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// TestKillsMidRollout: the three-step staged rollout (1, 25%,
// all) over twenty pools with running workers (one canary) on the local
// cluster: exactly the canary, then five, then all move, each step after
// the previous one's pools are Available and baked; paused mid-rollout it
// holds; the worker killed while a step's pools move and the starter killed
// while a step bakes and while it is paused, each started again, change
// nothing: the rollout completes, every pool moved exactly once, its
// workers untouched, each change of the rollout is one event on the config,
// and the checker finds P1-P6 held throughout.
func TestKillsMidRollout(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "ro" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}

	gv := v1alpha1.SandboxClassGVisor
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("old"), true)))
	var names []string
	for i := range 20 {
		name := fmt.Sprintf("p%d", i)
		names = append(names, name)
		wp := newPool(ns, name, gv, "")
		wp.Spec.Replicas = ptr(int32(1))
		if i == 13 {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	settle(t, chk, scope)
	pods := map[string][]string{}
	for _, name := range names {
		pods[name] = waitReadyPods(t, ns, name, 1)
		eventually(t, stepBound, "the pool Available", func() (bool, string) {
			c := meta.FindStatusCondition(getPool(t, ns, name).Status.Conditions, v1alpha1.ConditionAvailable)
			return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
		})
	}

	next := gvisorConfig(cfg("new"), true)
	pause := &metav1.Duration{Duration: 3 * time.Second}
	next.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{
		{Pools: ptr(int32(1)), Pause: pause}, {Percent: ptr(int32(25)), Pause: pause}, {Percent: ptr(int32(100))},
	}}
	createAfterOthers(t, kube, next)
	rollout := func(what string, cond func(*v1alpha1.RolloutStatus) bool) {
		t.Helper()
		eventually(t, stepBound, "the rollout "+what, func() (bool, string) {
			var c v1alpha1.SandboxConfig
			if err := kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c); err != nil || c.Status.Rollout == nil {
				return false, fmt.Sprint(err)
			}
			return cond(c.Status.Rollout), fmt.Sprintf("%+v", *c.Status.Rollout)
		})
	}
	rollout("baking step 1", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking })
	require.Equal(t, 1, onConfig(t, ns, cfg("new")), "exactly the canary after step 1")
	require.Equal(t, cfg("new"), getPool(t, ns, "p13").Status.SandboxClasses[0].ConfigRef.NameOf(), "the canary first")
	rollout("at step 2", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Phase == v1alpha1.RolloutProgressing })
	p.worker.Kill()
	p.worker.Start()
	rollout("baking step 2", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking })
	require.Equal(t, 5, onConfig(t, ns, cfg("new")), "25% after step 2, none more while it bakes")
	p.starter.Kill()
	p.starter.Start()

	// Paused (by the spec, as kubectl patch does) before step 3: held.
	require.NoError(t, kube.Patch(ctx, &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: cfg("new")}},
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"rollout":{"paused":true}}}`))))
	rollout("paused", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutPaused })
	// Killed while paused and started again: its resync starts nothing the
	// paused rollout has not admitted.
	p.starter.Kill()
	p.starter.Start()
	held := time.Now()
	for time.Since(held) < 3*time.Second {
		require.Equal(t, 5, onConfig(t, ns, cfg("new")), "nothing moves while paused")
		time.Sleep(100 * time.Millisecond) // the poll interval of an assertion over time
	}
	require.NoError(t, kube.Patch(ctx, &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: cfg("new")}},
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"rollout":{"paused":false}}}`))))
	rollout("completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })

	requireSound(t, chk, scope)
	// Each change told once, the kills notwithstanding: the events are
	// named from the run and their count in it.
	eventually(t, stepBound, "the rollout's events", func() (bool, string) {
		got := configEventReasons(t, cfg("new"))
		want := map[string]int{v1alpha1.EventReasonRolloutStepCompleted: 3, v1alpha1.EventReasonRolloutPaused: 1,
			v1alpha1.EventReasonRolloutResumed: 1, v1alpha1.EventReasonRolloutCompleted: 1}
		return maps.Equal(got, want), fmt.Sprint(got)
	})
	for _, name := range names {
		waitPool(t, ns, name, cfg("new"), metav1.ConditionTrue)
		waitEvents(t, ns, name, []string{
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, cfg("old")),
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, cfg("old"), cfg("new")),
		})
		require.Equal(t, pods[name], waitReadyPods(t, ns, name, 1), "the pool's workers across the rollout and the kills")
	}
}

// TestRolloutHaltsOnWorkersNotReady: on the local cluster, the canary's
// workers cannot be scheduled (a node selector no node matches), so the
// Deployment controller reports it not Available: the rollout, admitting
// it first, halts at the worker's step deadline with a Warning naming it,
// and nothing else moves. Once its workers run and paused is toggled, the
// rollout completes.
func TestRolloutHaltsOnWorkersNotReady(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "rh" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	p := startProduct(t, "ATE_ROLLOUT_STEP_DEADLINE_SECONDS=5")
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}

	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("old"), true)))
	for i := range 4 {
		wp := newPool(ns, fmt.Sprintf("p%d", i), v1alpha1.SandboxClassGVisor, "")
		wp.Spec.Replicas = ptr(int32(1))
		if i == 2 {
			// Ten workers: with the product's 10% budget, one may be
			// missing and the Deployment still Available; none may not.
			wp.Spec.Replicas = ptr(int32(10))
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
			wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{NodeSelector: map[string]v1alpha1.LabelValue{"example.com/no-such-node": "x"}}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	settle(t, chk, scope)
	eventually(t, stepBound, "the canary not Available", func() (bool, string) {
		c := meta.FindStatusCondition(getPool(t, ns, "p2").Status.Conditions, v1alpha1.ConditionAvailable)
		return c != nil && c.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", c)
	})

	next := gvisorConfig(cfg("new"), true)
	next.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Pools: ptr(int32(1))}, {Percent: ptr(int32(100))}}}
	createAfterOthers(t, kube, next)
	var st v1alpha1.RolloutStatus
	eventually(t, stepBound, "the rollout halted", func() (bool, string) {
		var c v1alpha1.SandboxConfig
		if err := kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c); err != nil || c.Status.Rollout == nil {
			return false, fmt.Sprint(err)
		}
		st = *c.Status.Rollout
		return st.Phase == v1alpha1.RolloutHalted, fmt.Sprintf("%+v", st)
	})
	require.Contains(t, st.Message, fmt.Sprintf("WorkerPool %s/p2 is not Available", ns))
	require.Equal(t, 1, onConfig(t, ns, cfg("new")), "only the canary moved")

	// Its workers scheduled, paused toggled: the rollout goes on.
	require.NoError(t, patchPool(ctx, kube, ns, "p2", func(wp *v1alpha1.WorkerPool) { wp.Spec.Template = nil }))
	waitReadyPods(t, ns, "p2", 10)
	for _, paused := range []bool{true, false} {
		require.NoError(t, kube.Patch(ctx, &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: cfg("new")}},
			client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"rollout":{"paused":%t}}}`, paused))))
		eventually(t, stepBound, fmt.Sprintf("paused %t taken in", paused), func() (bool, string) {
			var c v1alpha1.SandboxConfig
			require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c))
			return c.Status.Rollout.ObservedGeneration == c.Generation, fmt.Sprintf("%+v", *c.Status.Rollout)
		})
	}
	eventually(t, stepBound, "the rollout completed", func() (bool, string) {
		var c v1alpha1.SandboxConfig
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c))
		return c.Status.Rollout.Phase == v1alpha1.RolloutCompleted, fmt.Sprintf("%+v", *c.Status.Rollout)
	})
	requireSound(t, chk, scope)
	require.Equal(t, 4, onConfig(t, ns, cfg("new")))
}

// configEventReasons counts the events regarding a SandboxConfig by reason.
func configEventReasons(t testing.TB, config string) map[string]int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testenv.Current().RestConfig)
	require.NoError(t, err)
	list, err := cs.EventsV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int{}
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "SandboxConfig" && ev.Regarding.Name == config {
			out[ev.Reason]++
		}
	}
	return out
}
