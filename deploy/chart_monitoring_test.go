package deploy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"ate.dev/orchestrator/deploy/monitoring"
	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/hack/release/pkg/release"
)

// monitoringObject is the chart's object of a kind and name, or nil.
func monitoringObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// configData is the data of the chart's ConfigMap of settings.
func configData(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "ate-orchestrator-config-") {
			data, _, err := unstructured.NestedStringMap(o.Object, "data")
			require.NoError(t, err)
			return data
		}
	}
	t.Fatal("the chart renders no ConfigMap of settings")
	return nil
}

// TestChartMonitoring: the chart installs the PrometheusRule and the
// dashboard when asked, each what deploy/monitoring generates for the
// chart's monitoring.clusterLabel (the label the processes export under,
// from the same value), with the labels a kube-prometheus-stack selects on.
func TestChartMonitoring(t *testing.T) {
	t.Run("off by default; the processes export the default label", func(t *testing.T) {
		objs := renderChart(t, nil)
		require.Nil(t, monitoringObject(objs, "PrometheusRule", release.PrometheusRuleName))
		require.Nil(t, monitoringObject(objs, "ConfigMap", release.DashboardConfigMap))
		require.Equal(t, monitoring.DefaultClusterLabel, configData(t, objs)["METRICS_CLUSTER_LABEL"])
	})

	// As the release's monitoring.yaml (`make release`) has them, the
	// runbooks at the chart's appVersion (dev: main).
	t.Run("on, by default the release's monitoring.yaml", func(t *testing.T) {
		objs := renderChart(t, map[string]any{"monitoring": map[string]any{
			"prometheusRule": map[string]any{"enabled": true}, "dashboard": map[string]any{"enabled": true}}})
		b, err := release.RenderMonitoring("monitoring", "main", "https://github.com/ate-dev/ate-orchestrator")
		require.NoError(t, err)
		want := map[string]map[string]any{}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var o map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &o))
			want[o["kind"].(string)] = o
		}
		rule := monitoringObject(objs, "PrometheusRule", release.PrometheusRuleName)
		require.NotNil(t, rule)
		require.Equal(t, want["PrometheusRule"]["spec"], rule.Object["spec"])
		dash := monitoringObject(objs, "ConfigMap", release.DashboardConfigMap)
		require.NotNil(t, dash)
		require.Equal(t, want["ConfigMap"]["data"], dash.Object["data"])
		require.Equal(t, "1", dash.GetLabels()["grafana_dashboard"])
		require.Equal(t, systemNamespace, dash.GetNamespace())
	})

	t.Run("on, for a fleet keyed by k8s_cluster, selected by kube-prometheus-stack", func(t *testing.T) {
		const label = "k8s_cluster"
		objs := renderChart(t, map[string]any{
			"metrics": map[string]any{"component": map[string]any{"enabled": true}},
			"monitoring": map[string]any{
				"clusterLabel":   label,
				"labels":         map[string]any{"release": "kube-prometheus-stack"},
				"runbookBaseURL": "https://runbooks.example/ate/",
				"prometheusRule": map[string]any{"enabled": true},
				"dashboard": map[string]any{"enabled": true, "namespace": "grafana",
					"labels":      map[string]any{"grafana_dashboard": "ate"},
					"annotations": map[string]any{"grafana_folder": "ATE"}},
			}})
		require.Equal(t, label, configData(t, objs)["METRICS_CLUSTER_LABEL"], "the processes export the label the rules and the dashboard use")
		g, err := monitoring.Generate(monitoring.Config{ClusterLabel: label})
		require.NoError(t, err)

		rule := monitoringObject(objs, "PrometheusRule", release.PrometheusRuleName)
		require.NotNil(t, rule)
		require.Equal(t, "kube-prometheus-stack", rule.GetLabels()["release"])
		var wantRules map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(strings.ReplaceAll(string(g.Alerts),
			"runbook_url: docs/", "runbook_url: https://runbooks.example/ate/docs/")), &wantRules))
		require.Equal(t, wantRules, rule.Object["spec"])
		require.Contains(t, rule.Object["spec"].(map[string]any)["groups"].([]any)[0].(map[string]any)["rules"].([]any)[0].(map[string]any)["expr"], "sum by (k8s_cluster, ")

		dash := monitoringObject(objs, "ConfigMap", release.DashboardConfigMap)
		require.NotNil(t, dash)
		require.Equal(t, "grafana", dash.GetNamespace())
		require.Equal(t, "ate", dash.GetLabels()["grafana_dashboard"])
		require.Equal(t, map[string]string{"grafana_folder": "ATE"}, dash.GetAnnotations())
		data, _, err := unstructured.NestedString(dash.Object, "data", "ate-orchestrator.json")
		require.NoError(t, err)
		require.JSONEq(t, string(g.Dashboard), data)
		require.True(t, json.Valid([]byte(data)))

		pm := monitoringObject(objs, "PodMonitor", "ate-orchestrator")
		require.NotNil(t, pm)
		require.Equal(t, "kube-prometheus-stack", pm.GetLabels()["release"])
	})

	t.Run("a cluster label Prometheus would drop is refused", func(t *testing.T) {
		for _, l := range []string{"k8s-cluster", "__cluster", "1st"} {
			_, err := helmchart.Render(map[string]any{"image": kustomizeImage(t), "monitoring": map[string]any{"clusterLabel": l}})
			require.Error(t, err, l)
		}
	})
}
