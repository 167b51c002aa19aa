package monitoring

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promqlengine "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/stretchr/testify/require"
)

// series is a made-up time series: its labels (the name included) and its
// value at each minute from 0 to 20.
type series struct {
	labels map[string]string
	value  func(minute int) float64
}

// TestAlertsFire evaluates each alert's expression with Prometheus's own
// PromQL engine at minute 20 of made-up series: it fires on what it is for,
// and stays quiet on a healthy system. (The rules' `for:` is Prometheus's
// business.)
func TestAlertsFire(t *testing.T) {
	qs, err := AlertQueries()
	require.NoError(t, err)
	exprs := map[string]string{}
	for _, q := range qs {
		exprs[strings.TrimPrefix(q.Source, "alert ")] = q.Expr
	}
	steady := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	rising := func(start, perMinute float64) func(int) float64 {
		return func(m int) float64 { return start + perMinute*float64(m) }
	}
	stepAt10 := func(v float64) func(int) float64 {
		return func(m int) float64 {
			if m >= 10 {
				return v
			}
			return 0
		}
	}
	// Each alert has a case where it fires and one where it stays quiet.
	firing, quiet := map[string]bool{}, map[string]bool{}
	defer func() {
		for alert := range exprs {
			require.True(t, firing[alert], "no case where %s fires", alert)
			require.True(t, quiet[alert], "no case where %s stays quiet", alert)
		}
	}()
	for _, tc := range []struct {
		name, alert string
		series      []series
		want        map[string]float64 // the result's series (labels as Prometheus prints them) and values
	}{
		{"a rolled back switch", "ATESwitchRolledBack",
			[]series{{map[string]string{"__name__": "ate_switches_total", "outcome": "rolled back", "sandbox_class": "gvisor"}, stepAt10(1)}},
			map[string]float64{`{sandbox_class="gvisor"}`: 1}},
		{"only confirmed switches", "ATESwitchRolledBack",
			[]series{{map[string]string{"__name__": "ate_switches_total", "outcome": "confirmed", "sandbox_class": "gvisor"}, rising(0, 1)}},
			nil},
		{"a failed switch workflow", "ATEWorkflowFailing",
			[]series{{map[string]string{"__name__": "temporal_workflow_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch"}, stepAt10(2)}},
			map[string]float64{`{workflow_type="SandboxConfigSwitch"}`: 2}},
		{"failures long ago, and of other workflows", "ATEWorkflowFailing",
			[]series{
				{map[string]string{"__name__": "temporal_workflow_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch"}, steady(3)},
				{map[string]string{"__name__": "temporal_workflow_failed_total", "ate_process": "worker", "workflow_type": "SomeoneElsesWorkflow"}, rising(0, 1)},
			},
			nil},
		{"a local switch step failing", "ATESwitchStepRetrying",
			[]series{{map[string]string{"__name__": "temporal_local_activity_execution_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch", "activity_type": "Confirm"}, rising(0, 6)}},
			map[string]float64{`{activity_type="Confirm"}`: 0.1}},
		{"Claim failing", "ATESwitchStepRetrying",
			[]series{{map[string]string{"__name__": "temporal_activity_execution_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch", "activity_type": "Claim"}, rising(0, 6)}},
			map[string]float64{`{activity_type="Claim"}`: 0.1}},
		{"a release step failing is not a switch step", "ATESwitchStepRetrying",
			[]series{{map[string]string{"__name__": "temporal_activity_execution_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigRelease", "activity_type": "ReadConfig"}, rising(0, 6)}},
			nil},
		{"a release held for more than a day", "ATEReleaseWaitingLong",
			[]series{
				{map[string]string{"__name__": "ate_release_waiting_seconds", "sandbox_config": "old", "instance": "a"}, rising(90000, 60)},
				{map[string]string{"__name__": "ate_release_waiting_seconds", "sandbox_config": "old", "instance": "b"}, rising(89990, 60)},
				{map[string]string{"__name__": "ate_release_waiting_seconds", "sandbox_config": "new", "instance": "a"}, rising(600, 60)},
			},
			map[string]float64{`{sandbox_config="old"}`: 91200}},
		{"releases waiting less than a day", "ATEReleaseWaitingLong",
			[]series{{map[string]string{"__name__": "ate_release_waiting_seconds", "sandbox_config": "old", "instance": "a"}, rising(3600, 60)}},
			nil},
		{"a halted rollout", "ATERolloutHalted",
			[]series{
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "new", "phase": "Halted", "instance": "a"}, stepAt10(1)},
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "new", "phase": "Halted", "instance": "b"}, stepAt10(1)},
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "other", "phase": "Baking", "instance": "a"}, steady(1)},
			},
			map[string]float64{`{sandbox_config="new"}`: 1}},
		{"a rolled-back rollout", "ATERolloutRolledBack",
			[]series{
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "new", "phase": "RolledBack", "instance": "a"}, stepAt10(1)},
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "other", "phase": "Halted", "instance": "a"}, steady(1)},
			},
			map[string]float64{`{sandbox_config="new"}`: 1}},
		{"an aborted rollout is no rollback", "ATERolloutRolledBack",
			[]series{{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "new", "phase": "Aborted"}, steady(1)}},
			nil},
		{"rollouts progressing, baking, completed", "ATERolloutHalted",
			[]series{
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "new", "phase": "Progressing"}, steady(1)},
				{map[string]string{"__name__": "ate_rollout_phase", "sandbox_config": "old", "phase": "Completed"}, steady(1)},
			},
			nil},
		{"workflow task failures that stopped", "ATEWorkflowTaskFailures",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_execution_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch", "failure_reason": "NonDeterminismError"}, func(m int) float64 { return float64(min(m, 5)) }}},
			nil},
		{"workflow tasks failing", "ATEWorkflowTaskFailures",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_execution_failed_total", "ate_process": "worker", "workflow_type": "SandboxConfigSwitch", "failure_reason": "NonDeterminismError"}, rising(0, 1)}},
			map[string]float64{`{failure_reason="NonDeterminismError", workflow_type="SandboxConfigSwitch"}`: 10}},
		{"a worker polling", "ATEWorkerNotPolling",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_queue_poll_empty_total", "ate_process": "worker", "task_queue": "ate-orchestrator"}, rising(0, 1)}},
			nil},
		{"a worker busy, never idle", "ATEWorkerNotPolling",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_queue_poll_succeed_total", "ate_process": "worker", "task_queue": "ate-orchestrator"}, rising(0, 10)}},
			nil},
		{"no worker at all", "ATEWorkerNotPolling",
			[]series{{map[string]string{"__name__": "ate_starter_signals_total", "kind": "switch"}, rising(0, 1)}},
			map[string]float64{`{}`: 0}},
		{"a worker whose polls stopped", "ATEWorkerNotPolling",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_queue_poll_succeed_total", "ate_process": "worker", "task_queue": "ate-orchestrator"}, steady(5)}},
			map[string]float64{`{}`: 0}},
		{"a starter leading, another waiting", "ATEStarterNotLeading",
			[]series{
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "a"}, steady(1)},
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "b"}, steady(0)},
			},
			nil},
		{"a failover: the new leader took over", "ATEStarterNotLeading",
			[]series{
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "a"}, func(m int) float64 { return float64(1 - min(m/10, 1)) }},
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "b"}, stepAt10(1)},
			},
			nil},
		{"starters running, none leading", "ATEStarterNotLeading",
			[]series{
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "a"}, steady(0)},
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "b"}, steady(0)},
			},
			map[string]float64{`{}`: 0}},
		{"only the worker's pool reconciler leads", "ATEStarterNotLeading",
			[]series{
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-worker", "instance": "w"}, steady(1)},
				{map[string]string{"__name__": "leader_election_master_status", "name": "ate-orchestrator-starter", "instance": "a"}, steady(0)},
			},
			map[string]float64{`{}`: 0}},
		{"no starter at all", "ATEStarterNotLeading",
			[]series{{map[string]string{"__name__": "temporal_workflow_task_queue_poll_empty_total", "ate_process": "worker", "task_queue": "ate-orchestrator"}, rising(0, 1)}},
			map[string]float64{`{}`: 0}},
	} {
		if tc.want == nil {
			quiet[tc.alert] = true
		} else {
			firing[tc.alert] = true
		}
		// Alone, and in a Prometheus that scrapes another application's
		// Temporal worker too: its series neither fire an alert nor mask one.
		for _, shared := range []bool{false, true} {
			name, ss := tc.name, tc.series
			if shared {
				name, ss = tc.name+" beside an unrelated worker", append(slices.Clone(tc.series), unrelatedWorker(rising)...)
			}
			t.Run(name, func(t *testing.T) {
				expr, ok := exprs[tc.alert]
				require.True(t, ok, "no alert %s", tc.alert)
				got := evaluate(t, expr, ss)
				require.Len(t, got, len(tc.want), "%s gave %v", tc.alert, got)
				for k, v := range tc.want {
					require.Contains(t, got, k)
					require.InDelta(t, v, got[k], 1e-9, k)
				}
			})
		}
	}
}

// unrelatedWorker are the series of another application's Temporal worker
// scraped by the same Prometheus, as its SDK exports them (namespace is the
// Temporal namespace, pushed aside by the scrape's own as exported_namespace)
// with the scrape's labels: it polls busily, its workflow tasks, activities
// and workflows keep failing, and its own leader election leads. None of it
// carries the orchestrator's ate_process label.
func unrelatedWorker(rising func(start, perMinute float64) func(int) float64) []series {
	other := func(name string, l map[string]string) map[string]string {
		out := map[string]string{"__name__": name, "job": "billing/billing-worker", "namespace": "billing",
			"exported_namespace": "billing", "task_queue": "billing", "instance": "10.0.0.9:9090"}
		for k, v := range l {
			out[k] = v
		}
		return out
	}
	return []series{
		{other("temporal_workflow_task_queue_poll_succeed_total", nil), rising(0, 10)},
		{other("temporal_workflow_task_queue_poll_empty_total", nil), rising(0, 1)},
		{other("temporal_workflow_task_execution_failed_total", map[string]string{"workflow_type": "Invoice", "failure_reason": "NonDeterminismError"}), rising(0, 1)},
		{other("temporal_activity_execution_failed_total", map[string]string{"workflow_type": "Invoice", "activity_type": "Charge"}), rising(0, 6)},
		{other("temporal_local_activity_execution_failed_total", map[string]string{"workflow_type": "Invoice", "activity_type": "Lookup"}), rising(0, 6)},
		{other("temporal_workflow_failed_total", map[string]string{"workflow_type": "Invoice"}), rising(0, 1)},
		{other("leader_election_master_status", map[string]string{"name": "billing-controller"}), rising(1, 0)},
	}
}

// evaluate runs expr at minute 20 over the series.
func evaluate(t *testing.T, expr string, ss []series) map[string]float64 {
	t.Helper()
	var all []storage.Series
	for _, s := range ss {
		var samples []chunks.Sample
		for m := 0; m <= 20; m++ {
			samples = append(samples, sample{t: int64(m) * 60_000, f: s.value(m)})
		}
		all = append(all, storage.NewListSeries(labels.FromMap(s.labels), samples))
	}
	q := &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
		next:
			for _, s := range all {
				for _, m := range ms {
					if !m.Matches(s.Labels().Get(m.Name)) {
						continue next
					}
				}
				out = append(out, s)
			}
			return &seriesSet{series: out, i: -1}
		}}}
	engine := promqlengine.NewEngine(promqlengine.EngineOpts{MaxSamples: 100000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	query, err := engine.NewInstantQuery(context.Background(), q, nil, expr, time.UnixMilli(20*60_000))
	require.NoError(t, err, expr)
	defer query.Close()
	res := query.Exec(context.Background())
	require.NoError(t, res.Err, expr)
	vec, err := res.Vector()
	require.NoError(t, err, expr)
	got := map[string]float64{}
	for _, s := range vec {
		got[s.Metric.String()] = s.F
	}
	return got
}

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }
