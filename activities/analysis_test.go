package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// queries answers each query from a table, recording what was asked.
type queries struct {
	answers map[string][]rollout.Sample
	failing map[string]error
	asked   []string
	at      []time.Time
}

func (q *queries) Query(_ context.Context, query string, at time.Time) ([]rollout.Sample, error) {
	q.asked, q.at = append(q.asked, query), append(q.at, at)
	if err := q.failing[query]; err != nil {
		return nil, err
	}
	return q.answers[query], nil
}

// TestMeasureRolloutJudgesAndRecords: one round measures every metric at
// the workflow's time, with the step's pools and the worker's cluster in
// its query, judges each, returns the round (the history's record) and
// writes it to status.rollout.analysis with each metric's failures so far.
func TestMeasureRolloutJudgesAndRecords(t *testing.T) {
	a, store := rolloutFixture(t, nil, &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1})
	a.Scope = wfapi.Scope{Cluster: "prod-eu"}
	q := &queries{
		answers: map[string][]rollout.Sample{
			`errors{cluster="prod-eu",pool=~"c|d"}`: {{Labels: `{pool="c"}`, Value: 0.01}, {Labels: `{pool="d"}`, Value: 0.4}},
			`ok{config="new",step="1"}`:             {{Value: 0.999}},
		},
		failing: map[string]error{`latency{namespace=~"ns"}`: errors.New("server said 503")},
	}
	a.Metrics = q
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	in := MeasureInput{Config: "new", UID: "uid-new", Class: "gvisor", Step: 1, Pools: []string{"ns/c", "ns/d"}, At: at,
		Failures: map[string]int32{"errors": 2},
		Metrics: []v1alpha1.RolloutMetric{
			{Name: "errors", Query: `errors{cluster="{{.Cluster}}",pool=~"{{.Pools}}"}`, Max: ptr.To("0.1")},
			{Name: "ok", Query: `ok{config="{{.Config}}",step="{{.Step}}"}`, Min: ptr.To("0.99")},
			{Name: "latency", Query: `latency{namespace=~"{{.Namespaces}}"}`, Max: ptr.To("1")},
			{Name: "empty", Query: `nothing`, Max: ptr.To("1")},
		}}
	round, err := a.MeasureRollout(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, []time.Time{at, at, at, at}, q.at, "every query at the workflow's instant")
	phases := map[string]v1alpha1.MeasurementPhase{}
	for _, m := range round {
		phases[m.Metric] = m.Phase
	}
	require.Equal(t, map[string]v1alpha1.MeasurementPhase{"errors": v1alpha1.MeasurementFailed, "ok": v1alpha1.MeasurementSuccessful,
		"latency": v1alpha1.MeasurementInconclusive, "empty": v1alpha1.MeasurementInconclusive}, phases)
	require.Equal(t, `metric errors{pool="d"} is 0.4, above its max 0.1`, round[0].Message)
	require.Equal(t, `errors{cluster="prod-eu",pool=~"c|d"}`, round[0].Query, "the history keeps the query as run")
	require.Contains(t, round[2].Message, "server said 503")

	st := rolloutStatusOf(t, store)
	require.Len(t, st.Analysis, 4)
	require.Equal(t, v1alpha1.RolloutMeasurement{Metric: "errors", Step: 1, Phase: v1alpha1.MeasurementFailed, Value: `{pool="c"}=0.01 {pool="d"}=0.4`,
		Message: round[0].Message, Failures: 3}, withoutTime(st.Analysis[0]))
	require.True(t, st.Analysis[0].MeasuredAt.Time.Equal(at))
	require.Equal(t, int32(0), st.Analysis[1].Failures)
}

// TestMeasureRolloutWithoutPrometheusIsInconclusive: a worker with no
// Prometheus measures nothing and says why; a step does not pass
// unmeasured.
func TestMeasureRolloutWithoutPrometheusIsInconclusive(t *testing.T) {
	a, _ := rolloutFixture(t, nil, &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1})
	round, err := a.MeasureRollout(context.Background(), MeasureInput{Config: "new", UID: "uid-new", Step: 1,
		Metrics: []v1alpha1.RolloutMetric{{Name: "errors", Query: "errors", Max: ptr.To("0")}}})
	require.NoError(t, err)
	require.Len(t, round, 1)
	require.Equal(t, v1alpha1.MeasurementInconclusive, round[0].Phase)
	require.Contains(t, round[0].Message, "the worker has no Prometheus to query (its --prometheus-url is unset)")
}

func withoutTime(m v1alpha1.RolloutMeasurement) v1alpha1.RolloutMeasurement {
	m.MeasuredAt = v1alpha1.RolloutMeasurement{}.MeasuredAt
	return m
}
