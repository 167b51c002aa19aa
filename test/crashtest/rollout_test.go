package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/test/testenv"
)

// TestKillsMidRollout: a three-step staged rollout over eight pools with
// running workers (one canary) on the local cluster, the worker killed
// while a step's pools move and the starter killed while a step bakes,
// each started again: the rollout completes, every pool moved exactly
// once, its workers untouched, and the checker finds P1-P6 held
// throughout.
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
	for i := range 8 {
		name := fmt.Sprintf("p%d", i)
		names = append(names, name)
		wp := newPool(ns, name, gv, "")
		wp.Spec.Replicas = ptr(int32(1))
		if i == 5 {
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
		{Pools: ptr(int32(1)), Pause: pause}, {Percent: ptr(int32(50)), Pause: pause}, {Percent: ptr(int32(100))},
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
	rollout("at step 2", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Phase == v1alpha1.RolloutProgressing })
	p.worker.Kill()
	p.worker.Start()
	rollout("baking step 2", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking })
	require.Equal(t, 4, onConfig(t, ns, cfg("new")), "half the pools after step 2, none more while it bakes")
	p.starter.Kill()
	p.starter.Start()
	rollout("completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })

	requireSound(t, chk, scope)
	for _, name := range names {
		waitPool(t, ns, name, cfg("new"), metav1.ConditionTrue)
		waitEvents(t, ns, name, []string{
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, cfg("old")),
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, cfg("old"), cfg("new")),
		})
		require.Equal(t, pods[name], waitReadyPods(t, ns, name, 1), "the pool's workers across the rollout and the kills")
	}
}
