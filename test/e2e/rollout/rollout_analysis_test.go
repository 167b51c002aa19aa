package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// errorsAtMost10 is the analysis' one metric: the worst error ratio among
// the step's pools, at most 0.1.
func errorsAtMost10(s *producttest.SandboxErrors) v1alpha1.RolloutMetric { return s.Metric("0.1") }

// analysedRollout runs the product with the stack's Prometheus as the
// worker's, over four pools on "old" (p01 the canary) that the exporter says
// are healthy, and the rollout of "new": step 1 the canary, baked bake, then
// every pool, with an analysis of metric every second.
func analysedRollout(t *testing.T, onFailure v1alpha1.RolloutFailurePolicy, bake time.Duration, deadline time.Duration, metric func(*producttest.SandboxErrors) v1alpha1.RolloutMetric) (*producttest.Product, string, *producttest.SandboxErrors) {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := &producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs,
		Metrics: activities.PrometheusQuerier(env.Prometheus.Client()), RolloutStepDeadline: deadline}
	p.Run(t)
	ns := env.Namespace(t)
	s := producttest.ServeSandboxErrors(t, env.Prometheus, testenv.UniqueName(t))
	for _, name := range rolloutFleet(t, p, ns, 4, 1) {
		s.Set(ns, name, 0.01)
	}
	c := producttest.RolloutConfig("new", false, nil, producttest.Step(1, false, bake), producttest.Step(100, true, 0))
	c.Spec.Rollout.OnFailure = onFailure
	c.Spec.Rollout.Analysis = &v1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Second}, Metrics: []v1alpha1.RolloutMetric{metric(s)}}
	p.CreateAfterOthers(t, c)
	return p, ns, s
}

// TestRolloutAnalysisInBoundsCompletes: every measurement within bounds,
// the rollout completes; status keeps the last measurement, Successful,
// and the history every round.
func TestRolloutAnalysisInBoundsCompletes(t *testing.T) {
	p, ns, _ := analysedRollout(t, v1alpha1.RolloutOnFailureRollBack, 3*time.Second, 0, errorsAtMost10)
	st := p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.Len(t, st.Analysis, 1, "%+v", *st)
	require.Equal(t, v1alpha1.MeasurementSuccessful, st.Analysis[0].Phase)
	require.Equal(t, "0.01", st.Analysis[0].Value)
	require.Zero(t, st.Analysis[0].Failures)
	require.Len(t, producttest.OnConfig(t, p.Env.Kube, ns, "new"), 4)
	require.GreaterOrEqual(t, measureRounds(t, p, "new"), 4, "step 1 measured through its 3 s bake, and each step at its end")
}

// TestRolloutAnalysisOutOfBoundsRollsBack: once the canary moved, its
// sandboxes start failing (the exporter says 0.6): the analysis fails the
// step during its bake and, with onFailure RollBack, the canary goes back
// to "old", the rollout is RolledBack with a Warning naming the step, the
// metric and its value, its counts follow the canary back, and no other
// pool moved. A retry once the errors are gone takes the step again and
// completes.
func TestRolloutAnalysisOutOfBoundsRollsBack(t *testing.T) {
	p, ns, s := analysedRollout(t, v1alpha1.RolloutOnFailureRollBack, time.Hour, 0, errorsAtMost10)
	kube := p.Env.Kube
	p.WaitForConfig(t, ns, "p01", "new", metav1.ConditionTrue)
	s.Set(ns, "p01", 0.6)
	st := p.WaitForRollout(t, "new", "rolled back", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutRolledBack })
	require.Contains(t, st.Message, "step 1: analysis failed: metric errors is 0.6, above its max 0.1")
	require.NotNil(t, st.Abort)
	require.True(t, st.Abort.RolledBack)
	p.WaitForConfig(t, ns, "p01", "old", metav1.ConditionTrue)
	producttest.Eventually(t, "the Warning RolloutRolledBack", func() (bool, string) {
		events := warnings(p.ConfigEvents(t, "new"))
		for _, e := range events {
			if strings.Contains(e, "RolloutRolledBack") && strings.Contains(e, "rolled back at step 1") && strings.Contains(e, "metric errors is 0.6") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", events)
	})
	p.WaitForRollout(t, "new", "the counts of the rolled-back rollout: nothing admitted, nothing on it", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutRolledBack && s.AdmittedPools == 0 && s.MovedPools == 0 && s.TotalPools > 0
	})
	producttest.RequireStays(t, 3*time.Second, "nothing on new while rolled back", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 0, fmt.Sprintf("on new: %v", on)
	})

	// Fixed, and once Prometheus shows it (an operator looks too), retried.
	s.Set(ns, "p01", 0.01)
	s.WaitScraped(t, ns, "p01", 0.01)
	producttest.Request(t, kube, "new", v1alpha1.RolloutRetryAnnotation, "after-the-fix")
	p.WaitForConfig(t, ns, "p01", "new", metav1.ConditionTrue)
	p.WaitForRollout(t, "new", "step 1 baking again", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutBaking && s.Step == 1 && s.Abort == nil
	})
}

// TestRolloutAnalysisOutOfBoundsHalts: the same failure under the default
// onFailure halts: the canary stays on "new".
func TestRolloutAnalysisOutOfBoundsHalts(t *testing.T) {
	p, ns, s := analysedRollout(t, "", time.Hour, 0, errorsAtMost10)
	p.WaitForConfig(t, ns, "p01", "new", metav1.ConditionTrue)
	s.Set(ns, "p01", 0.6)
	st := p.WaitForRollout(t, "new", "halted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	require.Contains(t, st.Message, "metric errors is 0.6, above its max 0.1")
	require.Nil(t, st.Abort)
	producttest.RequireStays(t, 2*time.Second, "the canary stays on new", func() (bool, string) {
		on := producttest.OnConfig(t, p.Env.Kube, ns, "new")
		return len(on) == 1, fmt.Sprintf("on new: %v", on)
	})
}

// TestRolloutAnalysisWithNoDataHolds: a query with no data holds the step
// and says so, and fails it at the step deadline (12 s here).
func TestRolloutAnalysisWithNoDataHolds(t *testing.T) {
	noData := func(s *producttest.SandboxErrors) v1alpha1.RolloutMetric {
		m := s.Metric("0.1")
		m.Query = fmt.Sprintf(`max(ate_test_sandbox_errors{run=%q, pool="no-such-pool"})`, s.Run)
		return m
	}
	p, ns, _ := analysedRollout(t, "", 0, 12*time.Second, noData)
	p.WaitForConfig(t, ns, "p01", "new", metav1.ConditionTrue)
	st := p.WaitForRollout(t, "new", "holding, inconclusive", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutProgressing && strings.Contains(s.Message, "holding: its analysis is inconclusive")
	})
	require.Contains(t, st.Message, "metric errors inconclusive: no data")
	require.Equal(t, int32(1), st.Step)
	require.Len(t, st.Analysis, 1)
	require.Equal(t, v1alpha1.MeasurementInconclusive, st.Analysis[0].Phase)
	st = p.WaitForRollout(t, "new", "halted at the deadline", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	require.Contains(t, st.Message, "its analysis stayed inconclusive for 12s (the step deadline)")
	require.Len(t, producttest.OnConfig(t, p.Env.Kube, ns, "new"), 1, "only the canary moved")
}

// measureRounds counts the rounds of analysis a config's rollout completed,
// as its history records them: each MeasureRollout activity completed.
func measureRounds(t *testing.T, p *producttest.Product, config string) int {
	t.Helper()
	it := p.TemporalClient().GetWorkflowHistory(context.Background(), p.Scope().Cluster.RolloutWorkflowID(config), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "MeasureRollout" {
			scheduled[e.GetEventId()] = true
		}
		if c := e.GetActivityTaskCompletedEventAttributes(); c != nil && scheduled[c.GetScheduledEventId()] {
			n++
		}
	}
	return n
}
