package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	tclient "go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/test/producttest"
	"ate.dev/orchestrator/test/testenv"
)

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestMetricsMoveAfterASwitch scrapes both processes' metrics endpoints, as
// Prometheus does, and finds the product's counters moved by a switch.
func TestMetricsMoveAfterASwitch(t *testing.T) {
	env := testenv.Current()
	reg := prometheus.NewRegistry()
	handler, err := metrics.NewHandler(reg)
	require.NoError(t, err)
	opts := env.TemporalClientOptions()
	opts.MetricsHandler = handler
	tc, err := tclient.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	// The worker's SDK metrics, in a registry of this test's own (the
	// starter's are controller-runtime's, served as the starter serves them).
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	workerMetrics := srv.Listener.Addr().String()

	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: tc, StarterMetricsAddr: testenv.FreeAddr(t)}).Run(t)
	ns := env.Namespace(t)
	require.NoError(t, env.Kube.Create(context.Background(), producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, env.Kube.Create(context.Background(), producttest.Pool(ns, "measured", "")))
	p.WaitForConfig(t, ns, "measured", "gvisor-default", metav1.ConditionTrue)

	producttest.Eventually(t, "the worker's switch counter", func() (bool, string) {
		body := scrape(t, workerMetrics)
		return switchedOnce.MatchString(body) &&
			strings.Contains(body, "ate_switch_duration_seconds_count") &&
			strings.Contains(body, "temporal_local_activity_execution_latency_seconds"), grep(body, "ate_")
	})
	producttest.Eventually(t, "the starter's signal counter", func() (bool, string) {
		body := scrape(t, p.StarterMetricsAddr)
		return strings.Contains(body, `ate_starter_signals_total{kind="switch"}`) &&
			strings.Contains(body, "controller_runtime_reconcile_total"), grep(body, "ate_")
	})
}

// switchedOnce matches the confirmed-switch counter at 1, whatever other
// tags (task queue, workflow type) the SDK adds.
var switchedOnce = regexp.MustCompile(`(?m)^ate_switches_total\{[^}]*outcome="confirmed"[^}]*sandbox_class="gvisor"[^}]*\} 1$`)

func grep(body, prefix string) string {
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			lines = append(lines, l)
		}
	}
	return fmt.Sprint(lines)
}
