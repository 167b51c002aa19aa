package deploy_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
)

// The worker's Prometheus (worker.prometheus): its URL, the token file of
// a mounted Secret and the CA file of a mounted ConfigMap or Secret reach
// the worker's environment as the variables the worker reads, and nothing
// of it the starter's; a NetworkPolicy lets the worker reach its port.
func TestChartWorkerPrometheus(t *testing.T) {
	tests := []struct {
		name       string
		prometheus map[string]any
		wantEnv    map[string]string // the worker's PROMETHEUS_* variables
		wantVols   map[string]corev1.VolumeSource
		wantPort   int // of the NetworkPolicy ate-orchestrator-allow-prometheus; 0: none
	}{
		{
			name:     "none by default",
			wantEnv:  map[string]string{},
			wantVols: map[string]corev1.VolumeSource{},
		},
		{
			name:       "a URL alone",
			prometheus: map[string]any{"url": "http://prometheus-operated.monitoring.svc:9090"},
			wantEnv:    map[string]string{"PROMETHEUS_URL": "http://prometheus-operated.monitoring.svc:9090"},
			wantVols:   map[string]corev1.VolumeSource{},
			wantPort:   9090,
		},
		{
			name: "https with a token Secret and a CA ConfigMap",
			prometheus: map[string]any{
				"url":               "https://prometheus.example/prom",
				"bearerTokenSecret": map[string]any{"name": "prom-token", "key": "tok"},
				"ca":                map[string]any{"configMap": "prom-ca", "key": "bundle.pem"},
			},
			wantEnv: map[string]string{
				"PROMETHEUS_URL":               "https://prometheus.example/prom",
				"PROMETHEUS_BEARER_TOKEN_FILE": "/etc/ate/prometheus-token/tok",
				"PROMETHEUS_CA_FILE":           "/etc/ate/prometheus-ca/bundle.pem",
			},
			wantVols: map[string]corev1.VolumeSource{
				"/etc/ate/prometheus-token": {Secret: &corev1.SecretVolumeSource{SecretName: "prom-token"}},
				"/etc/ate/prometheus-ca":    {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "prom-ca"}}},
			},
			wantPort: 443,
		},
		{
			name: "a CA Secret, the default key",
			prometheus: map[string]any{
				"url": "https://prometheus.example:9091",
				"ca":  map[string]any{"secret": "prom-ca"},
			},
			wantEnv: map[string]string{
				"PROMETHEUS_URL":     "https://prometheus.example:9091",
				"PROMETHEUS_CA_FILE": "/etc/ate/prometheus-ca/ca.crt",
			},
			wantVols: map[string]corev1.VolumeSource{
				"/etc/ate/prometheus-ca": {Secret: &corev1.SecretVolumeSource{SecretName: "prom-ca"}},
			},
			wantPort: 9091,
		},
	}
	read := envNames(t, "worker")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := map[string]any{"networkPolicy": map[string]any{"enabled": true}}
			if tt.prometheus != nil {
				values["worker"] = map[string]any{"prometheus": tt.prometheus}
			}
			objs := renderChart(t, values)
			ds := chartDeployments(t, objs)
			worker, starter := ds["worker"].Spec.Template.Spec, ds["starter"].Spec.Template.Spec

			env := map[string]string{}
			for _, e := range worker.Containers[0].Env {
				if slices.Contains([]string{"PROMETHEUS_URL", "PROMETHEUS_BEARER_TOKEN_FILE", "PROMETHEUS_CA_FILE"}, e.Name) {
					env[e.Name] = e.Value
					require.Contains(t, read, e.Name, "the worker does not read %s", e.Name)
				}
			}
			require.Equal(t, tt.wantEnv, env)
			vols := map[string]corev1.VolumeSource{}
			for _, m := range worker.Containers[0].VolumeMounts {
				if m.Name != "prometheus-token" && m.Name != "prometheus-ca" {
					continue
				}
				require.True(t, m.ReadOnly, m.Name)
				require.Empty(t, m.SubPath, "%s: a subPath mount never sees a rotated Secret", m.Name)
				i := slices.IndexFunc(worker.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
				require.GreaterOrEqual(t, i, 0, "no volume %s", m.Name)
				src := worker.Volumes[i].VolumeSource
				// Defaults the API server would add are not the chart's.
				if src.Secret != nil {
					src.Secret = &corev1.SecretVolumeSource{SecretName: src.Secret.SecretName, Optional: src.Secret.Optional}
				}
				vols[m.MountPath] = src
			}
			require.Equal(t, tt.wantVols, vols)

			for _, e := range starter.Containers[0].Env {
				require.NotContains(t, e.Name, "PROMETHEUS", "the starter queries no Prometheus")
			}
			for _, v := range starter.Volumes {
				require.NotContains(t, v.Name, "prometheus", "the starter queries no Prometheus")
			}

			var np *networkingv1.NetworkPolicy
			for _, o := range objs {
				if o.GetKind() == "NetworkPolicy" && o.GetName() == "ate-orchestrator-allow-prometheus" {
					np = &networkingv1.NetworkPolicy{}
					chartObject(t, []*unstructured.Unstructured{o}, "NetworkPolicy", systemNamespace, o.GetName(), np)
				}
			}
			if tt.wantPort == 0 {
				require.Nil(t, np, "a NetworkPolicy for no Prometheus")
				return
			}
			require.NotNil(t, np, "no NetworkPolicy lets the worker reach Prometheus")
			require.Equal(t, "worker", np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"])
			require.Equal(t, tt.wantPort, np.Spec.Egress[0].Ports[0].Port.IntValue())
		})
	}
}

// Settings that cannot work are refused at render, not at the worker's
// start: a token or CA without URL, two CAs, a URL that is not http(s).
func TestChartRefusesABadWorkerPrometheus(t *testing.T) {
	for _, tt := range []struct {
		name       string
		prometheus map[string]any
		wantErr    string
	}{
		{"a token without URL", map[string]any{"bearerTokenSecret": map[string]any{"name": "t"}}, "are for worker.prometheus.url, which is empty"},
		{"a CA without URL", map[string]any{"ca": map[string]any{"secret": "c"}}, "are for worker.prometheus.url, which is empty"},
		{"two CAs", map[string]any{"url": "https://p", "ca": map[string]any{"secret": "c", "configMap": "c"}}, "set configMap or secret, not both"},
		{"no scheme", map[string]any{"url": "prometheus:9090"}, "schema"},
		{"a query", map[string]any{"url": "http://prometheus:9090/?x=1"}, "schema"},
		{"an unknown key", map[string]any{"address": "http://p"}, "schema"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmchart.Render(map[string]any{"worker": map[string]any{"prometheus": tt.prometheus}})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
