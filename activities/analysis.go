package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/promquery"
	"ate.dev/orchestrator/internal/rollout"
)

// Querier answers the PromQL instant queries of a rollout's analysis: the
// worker's Prometheus (--prometheus-url).
type Querier interface {
	Query(ctx context.Context, query string, at time.Time) ([]rollout.Sample, error)
}

// PrometheusQuerier is the Querier of a Prometheus client; nil (no
// Querier) for none.
func PrometheusQuerier(c *promquery.Client) Querier {
	if c == nil {
		return nil
	}
	return promQuerier{c}
}

type promQuerier struct{ c *promquery.Client }

func (q promQuerier) Query(ctx context.Context, query string, at time.Time) ([]rollout.Sample, error) {
	samples, err := q.c.Query(ctx, query, at)
	if err != nil {
		return nil, err
	}
	out := make([]rollout.Sample, len(samples))
	for i, s := range samples {
		out[i] = rollout.Sample{Labels: s.Labels, Value: s.Value}
	}
	return out, nil
}

// errNoPrometheus is the inconclusive answer of a worker with no
// Prometheus: the rollout holds and says so rather than pass unmeasured.
var errNoPrometheus = errors.New("the worker has no Prometheus to query (its --prometheus-url is unset)")

// MeasureInput asks for one round of a step's analysis: every metric
// measured once, at At. Failures are the step's failures of each metric
// before this round, for status.
type MeasureInput struct {
	Config  string                   `json:"config"`
	UID     types.UID                `json:"uid"`
	Class   string                   `json:"class"`
	Step    int32                    `json:"step"`
	Pools   []string                 `json:"pools"`
	Metrics []v1alpha1.RolloutMetric `json:"metrics"`
	// At is the time the queries are evaluated at: the workflow's clock
	// when it asked, so that a retried attempt measures the same instant.
	At       time.Time        `json:"at"`
	Failures map[string]int32 `json:"failures,omitempty"`
}

// MeasureRollout measures every metric of a step's analysis once and
// records the round in status.rollout.analysis; the round, returned, is
// what the workflow's history keeps of every measurement (what was asked,
// the answer and its judgement). A query that fails is an inconclusive
// measurement, not an activity failure: the workflow decides what an
// unanswered query does, and a retry would not measure anything else.
func (a *Activities) MeasureRollout(ctx context.Context, in MeasureInput) ([]rollout.Measurement, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return nil, err
	}
	vars := rollout.VarsOf(in.Config, in.Class, string(a.Scope.Cluster), in.Step, in.Pools)
	// The queries run side by side: a round takes as long as its slowest
	// query (at most analysisQueryTimeout), whatever the number of metrics.
	round := make([]rollout.Measurement, len(in.Metrics))
	var wg sync.WaitGroup
	for i, m := range in.Metrics {
		wg.Go(func() { round[i] = a.measure(ctx, m, vars, in.At) })
	}
	wg.Wait()
	status := make([]v1alpha1.RolloutMeasurement, 0, len(round))
	for _, m := range round {
		failures := in.Failures[m.Metric]
		if m.Phase == v1alpha1.MeasurementFailed {
			failures++
		}
		status = append(status, v1alpha1.RolloutMeasurement{Metric: m.Metric, Step: in.Step, Phase: m.Phase,
			Value: m.Value, Message: truncate(m.Message, 512), Failures: failures, MeasuredAt: metav1.NewTime(in.At)})
	}
	if err := a.patchRolloutRaw(ctx, in.Config, in.UID, map[string]any{"analysis": status}); err != nil {
		return nil, err
	}
	return round, nil
}

// measure runs one metric's query, bounded so that a slow query does not
// outlast the activity's timeout, and judges its result.
func (a *Activities) measure(ctx context.Context, m v1alpha1.RolloutMetric, vars rollout.QueryVars, at time.Time) rollout.Measurement {
	query, err := rollout.RenderQuery(m, vars)
	if err != nil {
		return rollout.Judge(m, m.Query, nil, err)
	}
	if a.Metrics == nil {
		return rollout.Judge(m, query, nil, errNoPrometheus)
	}
	qctx, cancel := context.WithTimeout(ctx, analysisQueryTimeout)
	defer cancel()
	samples, err := a.Metrics.Query(qctx, query, at)
	if err != nil {
		err = fmt.Errorf("query failed: %w", err)
	}
	return rollout.Judge(m, query, samples, err)
}

// analysisQueryTimeout bounds one query of a round.
const analysisQueryTimeout = 10 * time.Second
