package crashtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestKillsDuringAnalysisAndRollback: a rollout whose analysis runs on the
// stack's real Prometheus, with onFailure RollBack, over four pools with
// running workers. The worker is killed (SIGKILL) while step 1's analysis
// measures during its bake, then again as soon as the rollout rolled back
// (the canary's switch back under way). After each kill a new worker takes
// over: the analysis goes on measuring; the canary goes back to the old
// config exactly once; no other pool ever moved; one RolloutRolledBack
// event; every round the history scheduled completed or was cancelled by
// the workflow (none lost to the kills: a killed attempt is retried, at the
// same instant); and the checker finds P1-P6 held throughout.
func TestKillsDuringAnalysisAndRollback(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "ra" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	errs := producttest.ServeSandboxErrors(t, env.Prometheus, prefix)
	p := startProduct(t, "PROMETHEUS_URL="+env.Prometheus.URL())
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}

	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("old"), true)))
	names := []string{"p0", "p1", "p2", "p3"}
	for _, name := range names {
		wp := newPool(ns, name, v1alpha1.SandboxClassGVisor, "")
		wp.Spec.Replicas = ptr(int32(1))
		if name == "p2" {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
		errs.Set(ns, name, 0.01)
	}
	settle(t, chk, scope)
	for _, name := range names {
		eventually(t, stepBound, "the pool Available", func() (bool, string) {
			c := meta.FindStatusCondition(getPool(t, ns, name).Status.Conditions, v1alpha1.ConditionAvailable)
			return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
		})
	}

	next := gvisorConfig(cfg("new"), true)
	next.Spec.Rollout = &v1alpha1.SandboxConfigRollout{
		Steps:     []v1alpha1.RolloutStep{{Pools: ptr(int32(1)), Pause: &metav1.Duration{Duration: time.Hour}}, {Percent: ptr(int32(100))}},
		OnFailure: v1alpha1.RolloutOnFailureRollBack,
		Analysis:  &v1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Second}, Metrics: []v1alpha1.RolloutMetric{errs.Metric("0.1")}},
	}
	createAfterOthers(t, kube, next)
	id := env.ClusterName.RolloutWorkflowID(cfg("new"))
	status := func(what string, cond func(*v1alpha1.RolloutStatus) bool) {
		t.Helper()
		eventually(t, stepBound, "the rollout "+what, func() (bool, string) {
			var c v1alpha1.SandboxConfig
			if err := kube.Get(ctx, client.ObjectKey{Name: cfg("new")}, &c); err != nil || c.Status.Rollout == nil {
				return false, fmt.Sprint(err)
			}
			return cond(c.Status.Rollout), fmt.Sprintf("%+v", *c.Status.Rollout)
		})
	}

	// Killed while step 1 bakes and its analysis measures.
	status("baking step 1", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking })
	before := measureRounds(t, id).completed
	eventually(t, stepBound, "two more rounds of analysis", func() (bool, string) {
		n := measureRounds(t, id).completed
		return n >= before+2, fmt.Sprintf("%d rounds", n)
	})
	p.worker.Kill()
	p.worker.Start()
	killedAt := measureRounds(t, id).completed
	eventually(t, stepBound, "the analysis measuring again on the new worker", func() (bool, string) {
		n := measureRounds(t, id).completed
		return n >= killedAt+2, fmt.Sprintf("%d rounds", n)
	})
	require.Equal(t, 1, onConfig(t, ns, cfg("new")), "exactly the canary, still baking")

	// The canary's sandboxes fail: the analysis fails the step; killed as
	// soon as the rollout says it rolled back, while the canary goes back.
	errs.Set(ns, "p2", 0.6)
	status("rolled back", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutRolledBack })
	p.worker.Kill()
	p.worker.Start()
	waitPool(t, ns, "p2", cfg("old"), metav1.ConditionTrue)
	// Its counts follow the canary back while it holds, killed or not.
	status("still rolled back, its counts showing nothing on it", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutRolledBack && s.Abort != nil && s.Abort.RolledBack && s.AdmittedPools == 0 && s.MovedPools == 0
	})
	held := time.Now()
	for time.Since(held) < 3*time.Second {
		require.Zero(t, onConfig(t, ns, cfg("new")), "nothing moves to the config while rolled back")
		time.Sleep(100 * time.Millisecond) // the poll interval of an assertion over time
	}
	requireSound(t, chk, scope)

	eventually(t, stepBound, "one RolloutRolledBack", func() (bool, string) {
		got := configEventReasons(t, cfg("new"))
		return got[v1alpha1.EventReasonRolloutRolledBack] == 1, fmt.Sprint(got)
	})
	require.Zero(t, configEventReasons(t, cfg("new"))[v1alpha1.EventReasonRolloutHalted], "a rollback, not a halt")
	// The canary moved there and back once; the others never moved.
	waitEvents(t, ns, "p2", []string{
		fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, cfg("old")),
		fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, cfg("old"), cfg("new")),
		fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, cfg("new"), cfg("old")),
	})
	for _, name := range []string{"p0", "p1", "p3"} {
		waitEvents(t, ns, name, []string{fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, cfg("old"))})
	}
	// No round lost: each one scheduled completed, or was cancelled by the
	// workflow when the step ended (the round under way at the rollback).
	r := measureRounds(t, id)
	t.Logf("analysis rounds in the history: %d completed, %d cancelled, %d lost", r.completed, r.cancelled, r.lost)
	require.Zero(t, r.lost, "rounds scheduled that neither completed nor were cancelled: %+v", r)
	require.LessOrEqual(t, r.cancelled, 1, "%+v", r)
	require.Contains(t, r.failedRound, `"phase":"Failed"`, "the round that failed the step is in the history")
	require.Contains(t, r.failedRound, "0.6")
}

// rounds is what a rollout's history says of its analysis: the rounds
// completed, those the workflow cancelled, those neither (lost), and the
// result of the last round that failed a metric.
type rounds struct {
	completed, cancelled, lost int
	failedRound                string
}

func measureRounds(t *testing.T, workflowID string) rounds {
	t.Helper()
	it := testenv.Current().Temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	open := map[int64]bool{}
	var r rounds
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		switch {
		case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "MeasureRollout":
			open[e.GetEventId()] = true
		case open[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]:
			a := e.GetActivityTaskCompletedEventAttributes()
			delete(open, a.GetScheduledEventId())
			r.completed++
			if res := string(a.GetResult().GetPayloads()[0].GetData()); strings.Contains(res, `"phase":"Failed"`) {
				r.failedRound = res
			}
		case open[e.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()]:
			// The workflow cancelled the round (its step ended): whatever
			// the attempt under way does next, the workflow is done with it.
			delete(open, e.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId())
			r.cancelled++
		}
	}
	r.lost = len(open)
	return r
}
