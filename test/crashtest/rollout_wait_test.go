package crashtest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/testenv"
)

// TestKillDuringAStepsWait (issue 47): a kill during a step's wait under the
// new reading, where the wait polls the worker's cache and confirms the
// step's pools with live GETs. Step 1 admits the canary, whose workers
// cannot be scheduled (not Available), and one more pool; the worker is
// killed (SIGKILL) while WaitRolloutStep waits on it, and a new worker,
// with a new cache, takes the wait over once its heartbeat times out. The
// step is not done while the canary is not Available (checked for a while
// after the new worker's wait has looked), and is once its workers run: in
// the checker's history, at the status write that ends step 1 (Baking) every
// pool its admission names is on the config, with no claim pending, and
// Available, and at the one that completes the rollout every pool is. The
// wait's taken-over attempt ends Ready; every pool moved exactly once; P1-P6
// hold.
func TestKillDuringAStepsWait(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "rw" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}

	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("old"), true)))
	names := []string{"p0", "p1", "p2", "p3"}
	for _, name := range names {
		wp := newPool(ns, name, v1alpha1.SandboxClassGVisor, "")
		wp.Spec.Replicas = ptr(int32(1))
		if name == "p0" {
			// The canary: ten workers none of which can be scheduled,
			// so its Deployment is not Available (with the product's
			// 10% budget one may be missing, not ten).
			wp.Spec.Replicas = ptr(int32(10))
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
			wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{NodeSelector: map[string]v1alpha1.LabelValue{"example.com/no-such-node": "x"}}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	settle(t, chk, scope)
	available := func(name string) *metav1.Condition {
		return meta.FindStatusCondition(getPool(t, ns, name).Status.Conditions, v1alpha1.ConditionAvailable)
	}
	eventually(t, stepBound, "the canary not Available, the others Available", func() (bool, string) {
		c0 := available("p0")
		ok := c0 != nil && c0.Status == metav1.ConditionFalse
		for _, name := range names[1:] {
			c := available(name)
			ok = ok && c != nil && c.Status == metav1.ConditionTrue
		}
		return ok, fmt.Sprintf("p0: %+v", c0)
	})

	next := gvisorConfig(cfg("new"), true)
	next.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{
		{Pools: ptr(int32(2)), Pause: &metav1.Duration{Duration: 2 * time.Second}}, {Percent: ptr(int32(100))},
	}}
	createAfterOthers(t, kube, next)

	// Killed while its wait for step 1 runs.
	id := env.ClusterName.RolloutWorkflowID(cfg("new"))
	waitActivity := func(pid int, retried bool) func() (bool, string) {
		return func() (bool, string) {
			d, err := env.Temporal.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false, err.Error()
			}
			for _, a := range d.GetPendingActivities() {
				if a.GetActivityType().GetName() != "WaitRolloutStep" || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED ||
					!strings.HasPrefix(a.GetLastWorkerIdentity(), identityOf(pid)) {
					continue
				}
				if !retried {
					return true, ""
				}
				// The new attempt has looked at least once: its first
				// heartbeat follows its first look.
				if a.GetAttempt() > 1 && a.GetLastHeartbeatTime() != nil && !a.GetLastHeartbeatTime().AsTime().Before(a.GetLastStartedTime().AsTime()) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d pending activities: %v", len(d.GetPendingActivities()), d.GetPendingActivities())
		}
	}
	eventually(t, stepBound, "step 1's WaitRolloutStep running on the first worker", waitActivity(p.worker.Pid(), false))
	killed := p.worker.Pid()
	p.worker.Kill()
	t.Logf("worker %d killed during step 1's wait; %d pools on the new config", killed, onConfig(t, ns, cfg("new")))
	p.worker.Start()
	eventually(t, stepBound, "the new worker's attempt of the wait, looking", waitActivity(p.worker.Pid(), true))
	waitPool(t, ns, "p0", cfg("new"), metav1.ConditionTrue)
	waitPool(t, ns, "p1", cfg("new"), metav1.ConditionTrue)

	// Both admitted pools on the config, the canary not Available: not done.
	held := time.Now()
	for time.Since(held) < 3*time.Second {
		var c v1alpha1.SandboxConfig
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c))
		require.NotNil(t, c.Status.Rollout)
		st := c.Status.Rollout
		require.Equal(t, []any{int32(1), v1alpha1.RolloutProgressing}, []any{st.Step, st.Phase}, "step 1 waits for the canary: %+v", *st)
		require.Equal(t, metav1.ConditionFalse, available("p0").Status)
		time.Sleep(100 * time.Millisecond) // the poll interval of an assertion over time
	}
	require.Equal(t, 2, onConfig(t, ns, cfg("new")), "the two admitted pools moved, no other")

	// Its workers scheduled: the step ends, the rollout completes.
	require.NoError(t, patchPool(ctx, kube, ns, "p0", func(wp *v1alpha1.WorkerPool) { wp.Spec.Template = nil }))
	eventually(t, stepBound, "the rollout completed", func() (bool, string) {
		var c v1alpha1.SandboxConfig
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c))
		return c.Status.Rollout.Phase == v1alpha1.RolloutCompleted, fmt.Sprintf("%+v", *c.Status.Rollout)
	})
	requireSound(t, chk, scope)

	// The history: each step ended only with its admitted pools there.
	requireStepEndedWithItsPools(t, chk, ns, cfg("new"), func(st *v1alpha1.RolloutStatus) bool {
		return st.Step == 1 && st.Phase == v1alpha1.RolloutBaking
	}, 2)
	requireStepEndedWithItsPools(t, chk, ns, cfg("new"), func(st *v1alpha1.RolloutStatus) bool {
		return st.Phase == v1alpha1.RolloutCompleted
	}, len(names))

	// The wait the kill interrupted was taken over once, by the new
	// worker, and ended Ready. A workflow task of the rollout the killed
	// worker had started (a signal heard during the wait) is taken over
	// too, as a "local" rerun: the new worker's, but not the wait's.
	var again []rerun
	for _, r := range rerunsAfterKill(t, p.taskQueue, "WaitRolloutStep", killed) {
		if r.Workflow != id {
			continue
		}
		if r.How == "local" {
			require.True(t, strings.HasPrefix(r.Identity, identityOf(p.worker.Pid())), "a workflow task of the killed worker taken over by the new one: %+v", r)
			continue
		}
		again = append(again, r)
	}
	require.Len(t, again, 1, "the wait of the killed worker (pid %d) taken over once: %+v", killed, again)
	require.True(t, strings.HasPrefix(again[0].Identity, identityOf(p.worker.Pid())), "%+v", again[0])
	require.Contains(t, again[0].Result, `"outcome":"Ready"`)

	eventually(t, stepBound, "the rollout's events", func() (bool, string) {
		got := configEventReasons(t, cfg("new"))
		want := map[string]int{v1alpha1.EventReasonRolloutStepCompleted: 2, v1alpha1.EventReasonRolloutCompleted: 1}
		return maps.Equal(got, want), fmt.Sprint(got)
	})
	for _, name := range names {
		waitPool(t, ns, name, cfg("new"), metav1.ConditionTrue)
		waitEvents(t, ns, name, []string{
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, cfg("old")),
			fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, cfg("old"), cfg("new")),
		})
	}
}

// requireStepEndedWithItsPools finds, in the checker's history, the first
// state of config whose status.rollout matches ended (the write that ends a
// step), and requires that at that revision every pool of ns its admission
// admits, want of them, was on the config with no claim pending and
// Available: what the wait must have seen before it let the step end.
func requireStepEndedWithItsPools(t *testing.T, chk *Checker, ns, config string, ended func(*v1alpha1.RolloutStatus) bool, want int) {
	t.Helper()
	chk.mu.Lock()
	defer chk.mu.Unlock()
	var end *Record
	for _, r := range chk.records {
		if c := r.Config; c != nil && !r.Deleted && c.Name == config && c.Status.Rollout != nil && ended(c.Status.Rollout) && (end == nil || r.RV < end.RV) {
			end = r
		}
	}
	require.NotNil(t, end, "no state of SandboxConfig %s ends the step", config)
	pools := map[string]*Record{} // each pool's last state before the end
	for _, r := range chk.records {
		if r.Pool == nil || r.Pool.Namespace != ns || r.RV > end.RV {
			continue
		}
		require.Zero(t, r.GapFrom, "no watch gap in %s's history", r.Key())
		if prev := pools[r.Key()]; prev == nil || prev.RV < r.RV {
			pools[r.Key()] = r
		}
	}
	adm := rollout.AdmissionOf(end.Config)
	admitted := 0
	for key, r := range pools {
		wp := r.Pool
		var current, pending string
		if st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor); st != nil {
			current, pending = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf()
		}
		if r.Deleted || !adm.Admits(rollout.KeyOf(wp), current, config) {
			continue
		}
		admitted++
		c := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionAvailable)
		require.True(t, current == config && pending == "" && c != nil && c.Status == metav1.ConditionTrue,
			"at revision %d, where SandboxConfig %s's status says %q (step %d), the admitted WorkerPool %s (revision %d) is on %q, pending %q, Available %+v",
			end.RV, config, end.Config.Status.Rollout.Phase, end.Config.Status.Rollout.Step, key, r.RV, current, pending, c)
	}
	require.Equal(t, want, admitted, "the pools admitted at revision %d", end.RV)
}
