package options

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/probes"
)

// TestProcessMetricsCarryTheCluster sets a process up as Main does and
// scrapes its /metrics: every series, the SDK's (temporal_*), the product's
// (ate_*) and the libraries' alike, carries the cluster under
// --metrics-cluster-label, named by --cluster-name from the start, or by
// the kube-system UID once the process has named its cluster.
func TestProcessMetricsCarryTheCluster(t *testing.T) {
	const uid = "5d6c0b2e-0a8e-4c1f-9d1e-3f2b7a9c1e42"
	// The API server, as far as naming a cluster goes: kube-system's UID.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-system" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":%q}}`, uid)
	}))
	defer api.Close()

	// Each case records its own metrics: every Process registers its SDK
	// handler in controller-runtime's registry, where the cases before
	// left theirs.
	for i, tc := range []struct {
		name, clusterName, label, want string
	}{
		{"named, default label", "prod-eu-1", "", "prod-eu-1"},
		{"named, label of the operator's choice", "prod-eu-1", "k8s_cluster", "prod-eu-1"},
		{"named by its UID", "", "cluster", uid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Kubeconfig: writeKubeconfig(t, t.TempDir(), "kubeconfig", "127.0.0.1"),
				ClusterName: tc.clusterName, MetricsClusterLabel: tc.label, LogFormat: "text", LogLevel: "error"}
			proc, err := o.Process("worker")
			require.NoError(t, err)
			proc.Rest = &rest.Config{Host: api.URL}
			label := tc.label
			if label == "" {
				label = "cluster"
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			addr := freeAddr(t)
			require.NoError(t, probes.ServeMetrics(ctx, probes.Metrics{BindAddress: addr}, nil, proc.Log))
			sdk, own := fmt.Sprintf("temporal_test_polls_%d", i), fmt.Sprintf("ate_test_switches_%d", i)
			proc.Temporal.MetricsHandler.WithTags(map[string]string{"task_queue": "q"}).Counter(sdk).Inc(1)
			proc.Temporal.MetricsHandler.Counter(own).Inc(1)

			if tc.clusterName == "" {
				fams := scrapeMetrics(t, addr)
				require.NotContains(t, labelsOf(fams, own+"_total")[0], label, "no cluster before it is named")
				var told []error
				named := proc.Named(ctx, func(err error) { told = append(told, err) })
				named(fmt.Errorf("forbidden"))
				named(nil)
				require.Len(t, told, 2, "the probes are told as before")
			}
			fams := scrapeMetrics(t, addr)
			for _, name := range []string{own + "_total", sdk + "_total", "go_goroutines"} {
				require.Contains(t, fams, name)
			}
			for name := range fams {
				for _, l := range labelsOf(fams, name) {
					require.Equal(t, tc.want, l[label], "%s %v", name, l)
				}
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// scrapeMetrics reads addr's /metrics as Prometheus does, once the server
// answers.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	var resp *http.Response
	require.Eventually(t, func() bool {
		var err error
		// An error: not listening yet.
		resp, err = http.Get("http://" + addr + "/metrics") //nolint:bodyclose // closed below, once it answered
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the metrics server on %s", addr)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

func labelsOf(fams map[string]*dto.MetricFamily, name string) []map[string]string {
	var out []map[string]string
	for _, m := range fams[name].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		out = append(out, l)
	}
	return out
}
