package monitoring

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"
)

// TestRulesParseWithPrometheusRuleParser loads alerts.yaml as Prometheus
// does, and checks each alert the README promises is there, labelled and
// explained.
func TestRulesParseWithPrometheusRuleParser(t *testing.T) {
	groups, err := Rules()
	require.NoError(t, err)
	alerts := map[string]rulefmt.Rule{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: only alerting rules here", g.Name)
			alerts[r.Alert] = r
		}
	}
	for _, tc := range []struct {
		alert    string
		severity string
		metric   string // the metric its expression must use
	}{
		{"ATESwitchRolledBack", "warning", "ate_switches_total"},
		{"ATEWorkflowFailing", "warning", "temporal_workflow_failed_total"},
		{"ATESwitchStepRetrying", "warning", "temporal_local_activity_execution_failed_total"},
		{"ATEReleaseWaitingLong", "warning", "ate_release_waiting_seconds"},
		{"ATERolloutHalted", "warning", "ate_rollout_phase"},
		{"ATERolloutRolledBack", "warning", "ate_rollout_phase"},
		{"ATEWorkflowTaskFailures", "critical", "temporal_workflow_task_execution_failed_total"},
		{"ATEWorkerNotPolling", "critical", "temporal_workflow_task_queue_poll_empty_total"},
		{"ATEStarterNotLeading", "critical", "leader_election_master_status"},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			r, ok := alerts[tc.alert]
			require.True(t, ok, "alert %s missing", tc.alert)
			require.Equal(t, tc.severity, r.Labels["severity"])
			require.NotEmpty(t, r.Annotations["summary"])
			require.NotEmpty(t, r.Annotations["description"])
			require.Contains(t, r.Expr, tc.metric)
			// Its section of docs/runbooks.md, named after it (test/docs
			// checks the heading is there).
			require.Equal(t, "docs/runbooks.md#"+strings.ToLower(tc.alert), r.Annotations["runbook_url"])
		})
	}
	require.Len(t, alerts, 9, "an alert added here needs a case above, a line in the README and a section in docs/runbooks.md")
}

// TestRuleParserRefusesBrokenRules shows the parser used above is strict:
// each broken file is refused with the reason.
func TestRuleParserRefusesBrokenRules(t *testing.T) {
	for _, tc := range []struct{ name, rules, want string }{
		{"bad PromQL", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(rate(x[5m])\n", "could not parse expression"},
		{"unknown field", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    severity: page\n", "field severity not found"},
		{"bad template", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    annotations:\n      summary: '{{ $labels.x '\n", "template"},
		{"valid", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := rulefmt.Parse([]byte(tc.rules), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
			if tc.want == "" {
				require.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			require.Contains(t, strings.Join(msgs, "; "), tc.want)
		})
	}
}

// TestDashboardShowsTheTopics parses every panel's query and checks the
// dashboard covers what an operator watches, each panel on the dashboard's
// data source variable.
func TestDashboardShowsTheTopics(t *testing.T) {
	names, err := MetricNames()
	require.NoError(t, err)
	for _, metric := range []string{
		"ate_switches_total", "ate_switch_duration_seconds_bucket", // switches by outcome and duration
		"ate_releases_waiting", "ate_release_waiting_seconds", "ate_release_wait_seconds_bucket", "ate_releases_total", // releases
		"controller_runtime_reconcile_total",                                      // pool passes
		"temporal_workflow_task_execution_failed_total",                           // workflow task failures
		"temporal_activity_execution_failed_total",                                // activity retries
		"temporal_local_activity_execution_failed_total",                          // local step retries
		"ate_starter_signals_total",                                               // starter signals and starts
		"ate_rollout_moved_pools", "ate_rollout_total_pools", "ate_rollout_phase", // staged rollouts
	} {
		require.Contains(t, names, metric)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []json.RawMessage `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(Dashboard, &d))
	require.Equal(t, "ate-orchestrator", d.UID)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d used twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
	}
}
