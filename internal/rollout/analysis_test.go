package rollout

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestRenderQuery(t *testing.T) {
	vars := VarsOf("gvisor-v2", "gvisor", "prod-eu", 2, []string{"team-b/web.1", "team-a/api", "team-b/batch"})
	for _, tc := range []struct {
		name, query, want, err string
	}{
		{name: "every variable",
			query: `sum(rate(errors{cluster="{{.Cluster}}",config="{{.Config}}",class="{{.Class}}",step="{{.Step}}",namespace=~"{{.Namespaces}}",pool=~"{{.Pools}}"}[1m]))`,
			want:  `sum(rate(errors{cluster="prod-eu",config="gvisor-v2",class="gvisor",step="2",namespace=~"team-a|team-b",pool=~"web\\.1|api|batch"}[1m]))`},
		{name: "no template at all", query: `vector(1)`, want: `vector(1)`},
		{name: "a variable that does not exist", query: `up{x="{{.Pool}}"}`, err: "spec.rollout.analysis.metrics[m].query: "},
		{name: "not a template", query: `up{x="{{.Pools"}`, err: "spec.rollout.analysis.metrics[m].query is not a valid template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderQuery(v1alpha1.RolloutMetric{Name: "m", Query: tc.query}, vars)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJudge(t *testing.T) {
	within := v1alpha1.RolloutMetric{Name: "ok-rate", Min: ptr.To("0.99"), Max: ptr.To("1")}
	for _, tc := range []struct {
		name    string
		metric  v1alpha1.RolloutMetric
		samples []Sample
		err     error
		phase   v1alpha1.MeasurementPhase
		value   string
		message string
	}{
		{name: "a scalar within bounds", metric: within, samples: []Sample{{Value: 0.995}},
			phase: v1alpha1.MeasurementSuccessful, value: "0.995"},
		{name: "at the bound is within", metric: within, samples: []Sample{{Value: 0.99}},
			phase: v1alpha1.MeasurementSuccessful, value: "0.99"},
		{name: "below min", metric: within, samples: []Sample{{Value: 0.9}},
			phase: v1alpha1.MeasurementFailed, value: "0.9", message: "metric ok-rate is 0.9, below its min 0.99"},
		{name: "one series of several out of bounds names it", metric: within,
			samples: []Sample{{Labels: `{pool="a"}`, Value: 1}, {Labels: `{pool="b"}`, Value: 0.5}},
			phase:   v1alpha1.MeasurementFailed, value: `{pool="a"}=1 {pool="b"}=0.5`, message: `metric ok-rate{pool="b"} is 0.5, below its min 0.99`},
		{name: "an aggregation's series without labels reads as a number", metric: within, samples: []Sample{{Labels: "{}", Value: 0.6}},
			phase: v1alpha1.MeasurementFailed, value: "0.6", message: "metric ok-rate is 0.6, below its min 0.99"},
		{name: "max only", metric: v1alpha1.RolloutMetric{Name: "errors", Max: ptr.To("1e-3")}, samples: []Sample{{Value: 0.002}},
			phase: v1alpha1.MeasurementFailed, value: "0.002", message: "metric errors is 0.002, above its max 1e-3"},
		{name: "NaN breaks any bound", metric: within, samples: []Sample{{Value: math.NaN()}},
			phase: v1alpha1.MeasurementFailed, value: "NaN", message: "metric ok-rate is NaN, not a number, which no bound admits"},
		{name: "no data is inconclusive", metric: within,
			phase: v1alpha1.MeasurementInconclusive, message: "no data: the query q returned no series"},
		{name: "a query error is inconclusive", metric: within, err: errors.New("query failed: 400 bad_data"),
			phase: v1alpha1.MeasurementInconclusive, message: "query failed: 400 bad_data"},
		{name: "a bound that is no number is inconclusive", metric: v1alpha1.RolloutMetric{Name: "x", Max: ptr.To("lots")}, samples: []Sample{{Value: 1}},
			phase: v1alpha1.MeasurementInconclusive, value: "1", message: `spec.rollout.analysis.metrics[x].max "lots" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.metric, "q", tc.samples, tc.err)
			require.Equal(t, Measurement{Metric: tc.metric.Name, Query: "q", Phase: tc.phase, Value: tc.value, Message: tc.message}, got)
		})
	}
}

func TestTally(t *testing.T) {
	metrics := []v1alpha1.RolloutMetric{{Name: "a"}, {Name: "b"}}
	ok := func(m string) Measurement { return Measurement{Metric: m, Phase: v1alpha1.MeasurementSuccessful} }
	bad := func(m string) Measurement {
		return Measurement{Metric: m, Phase: v1alpha1.MeasurementFailed, Message: "too high"}
	}
	none := func(m string) Measurement {
		return Measurement{Metric: m, Phase: v1alpha1.MeasurementInconclusive, Message: "no data"}
	}

	tl := NewTally(1)
	require.Equal(t, "metric a not measured yet; metric b not measured yet", tl.Inconclusive(metrics))
	require.Nil(t, tl.Add([]Measurement{bad("a"), none("b")}), "one failure is within the limit of 1")
	require.Equal(t, "metric b inconclusive: no data", tl.Inconclusive(metrics), "a failure within the limit does not hold the step")
	require.Nil(t, tl.Add([]Measurement{ok("a"), ok("b")}))
	require.Empty(t, tl.Inconclusive(metrics))
	failed := tl.Add([]Measurement{ok("a"), bad("b")})
	require.Nil(t, failed, "b's first failure")
	failed = tl.Add([]Measurement{bad("a"), bad("b")})
	require.NotNil(t, failed)
	require.Equal(t, "a", failed.Metric, "the first metric past its limit")
	require.Equal(t, map[string]int32{"a": 2, "b": 2}, tl.Failures)
}

func TestAnalysisInterval(t *testing.T) {
	require.Equal(t, DefaultAnalysisInterval, AnalysisInterval(nil))
	require.Equal(t, DefaultAnalysisInterval, AnalysisInterval(&v1alpha1.RolloutAnalysis{}))
	require.Equal(t, time.Minute, AnalysisInterval(&v1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Minute}}))
	require.Equal(t, MinAnalysisInterval, AnalysisInterval(&v1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Millisecond}}))
}
