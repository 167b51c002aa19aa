package monitoring

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// TestAlertsKeepClustersApart evaluates each alert over a fleet's series in
// one Prometheus (Thanos, Mimir): cluster "broken" fails while cluster
// "healthy" does what a healthy cluster does. Each alert fires for the
// broken cluster alone, labelled with it: the healthy cluster's polls, its
// leader, its rollouts do not mask the broken one's. Under the default
// label and under one of the operator's choice (Generate), as the worker and
// the starter export it (--metrics-cluster-label).
func TestAlertsKeepClustersApart(t *testing.T) {
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
	for _, label := range []string{DefaultClusterLabel, "k8s_cluster"} {
		g, err := Generate(Config{ClusterLabel: label})
		require.NoError(t, err)
		qs, err := AlertQueriesOf(g.Alerts)
		require.NoError(t, err)
		exprs := map[string]string{}
		for _, q := range qs {
			exprs[strings.TrimPrefix(q.Source, "alert ")] = q.Expr
		}
		// in is a series of cluster c: its name, then label pairs.
		in := func(c, name string, kv ...string) map[string]string {
			l := map[string]string{"__name__": name, label: c}
			for i := 0; i+1 < len(kv); i += 2 {
				l[kv[i]] = kv[i+1]
			}
			return l
		}
		// poller are a cluster's worker's polls; leaders its Leases' holders.
		poller := func(c string) []series {
			return []series{
				{in(c, "temporal_workflow_task_queue_poll_succeed_total", "ate_process", "worker"), rising(0, 10)},
				{in(c, "temporal_workflow_task_queue_poll_empty_total", "ate_process", "worker"), rising(0, 1)},
			}
		}
		leaders := func(c string, starter float64) []series {
			return []series{
				{in(c, "leader_election_master_status", "name", "ate-orchestrator-worker"), steady(1)},
				{in(c, "leader_election_master_status", "name", "ate-orchestrator-starter", "instance", "a"), steady(starter)},
				{in(c, "leader_election_master_status", "name", "ate-orchestrator-starter", "instance", "b"), steady(0)},
			}
		}
		// broken is the result's series of the broken cluster, with more
		// label pairs, as Prometheus prints it.
		broken := func(more ...string) string {
			return labels.FromStrings(append([]string{label, "broken"}, more...)...).String()
		}
		for _, tc := range []struct {
			name, alert string
			series      [][]series
			want        map[string]float64
		}{
			{"one cluster's worker stopped polling, the other's polls", "ATEWorkerNotPolling",
				[][]series{poller("healthy"), leaders("healthy", 1), leaders("broken", 1), {
					{in("broken", "temporal_workflow_task_queue_poll_succeed_total", "ate_process", "worker"), steady(40)},
					{in("broken", "temporal_workflow_task_queue_poll_empty_total", "ate_process", "worker"), steady(7)},
				}},
				map[string]float64{broken(): 0}},
			{"one cluster's worker is gone, its starter is there", "ATEWorkerNotPolling",
				[][]series{poller("healthy"), leaders("healthy", 1), leaders("broken", 1)[1:]},
				map[string]float64{broken(): 0}},
			{"one cluster's worker only ever had empty polls", "ATEWorkerNotPolling",
				[][]series{poller("healthy"), {{in("broken", "temporal_workflow_task_queue_poll_empty_total", "ate_process", "worker"), rising(0, 1)}}},
				nil},
			{"no cluster's starter leads in one cluster", "ATEStarterNotLeading",
				[][]series{poller("healthy"), leaders("healthy", 1), leaders("broken", 0)},
				map[string]float64{broken(): 0}},
			{"one cluster's starters are gone, its worker is there", "ATEStarterNotLeading",
				[][]series{leaders("healthy", 1), leaders("broken", 1)[:1]},
				map[string]float64{broken(): 0}},
			{"a rollout halted in one cluster, the same config bakes in the other", "ATERolloutHalted",
				[][]series{{
					{in("broken", "ate_rollout_phase", "sandbox_config", "gvisor-v2", "phase", "Halted"), stepAt10(1)},
					{in("healthy", "ate_rollout_phase", "sandbox_config", "gvisor-v2", "phase", "Baking"), steady(1)},
					{in("healthy", "ate_rollout_phase", "sandbox_config", "gvisor-v2", "phase", "AwaitingApproval"), steady(1)},
				}},
				map[string]float64{broken("sandbox_config", "gvisor-v2"): 1}},
			{"an aborted rollout is no halt", "ATERolloutHalted",
				[][]series{{{in("broken", "ate_rollout_phase", "sandbox_config", "gvisor-v2", "phase", "Aborted"), steady(1)}}},
				nil},
			{"a switch rolled back in one cluster", "ATESwitchRolledBack",
				[][]series{{
					{in("broken", "ate_switches_total", "outcome", "rolled back", "sandbox_class", "gvisor"), stepAt10(1)},
					{in("healthy", "ate_switches_total", "outcome", "confirmed", "sandbox_class", "gvisor"), rising(0, 1)},
				}},
				map[string]float64{broken("sandbox_class", "gvisor"): 1}},
			{"a release waits a day in one cluster", "ATEReleaseWaitingLong",
				[][]series{{
					{in("broken", "ate_release_waiting_seconds", "sandbox_config", "old"), rising(90000, 60)},
					{in("healthy", "ate_release_waiting_seconds", "sandbox_config", "old"), rising(60, 60)},
				}},
				map[string]float64{broken("sandbox_config", "old"): 91200}},
			{"workflow tasks fail in one cluster", "ATEWorkflowTaskFailures",
				[][]series{{
					{in("broken", "temporal_workflow_task_execution_failed_total", "ate_process", "worker", "workflow_type", "SandboxConfigSwitch", "failure_reason", "NonDeterminismError"), rising(0, 1)},
				}},
				map[string]float64{broken("failure_reason", "NonDeterminismError", "workflow_type", "SandboxConfigSwitch"): 10}},
			{"switch workflows fail in one cluster", "ATEWorkflowFailing",
				[][]series{{
					{in("broken", "temporal_workflow_failed_total", "ate_process", "worker", "workflow_type", "SandboxConfigSwitch"), stepAt10(2)},
					{in("healthy", "temporal_workflow_failed_total", "ate_process", "worker", "workflow_type", "SandboxConfigSwitch"), steady(5)},
				}},
				map[string]float64{broken("workflow_type", "SandboxConfigSwitch"): 2}},
			{"a switch step retries in one cluster", "ATESwitchStepRetrying",
				[][]series{{
					{in("broken", "temporal_activity_execution_failed_total", "ate_process", "worker", "workflow_type", "SandboxConfigSwitch", "activity_type", "Claim"), rising(0, 6)},
				}},
				map[string]float64{broken("activity_type", "Claim"): 0.1}},
		} {
			t.Run(label+"/"+tc.name, func(t *testing.T) {
				var ss []series
				for _, s := range tc.series {
					ss = append(ss, s...)
				}
				ss = append(ss, unrelatedWorker(rising)...)
				got := evaluate(t, exprs[tc.alert], ss)
				require.Equal(t, len(tc.want), len(got), "%s gave %v", tc.alert, got)
				for k, v := range tc.want {
					require.Contains(t, got, k)
					require.InDelta(t, v, got[k], 1e-9, k)
				}
			})
		}
	}
}
