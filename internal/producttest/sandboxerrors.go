package producttest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/promquery"
)

// SandboxErrors is a service a test plays for a rollout's analysis to
// judge: it serves each pool's share of failing sandboxes, as the test sets
// it, as ate_test_sandbox_errors{namespace, pool, run} to the stack's real
// Prometheus, which scrapes it every second. Run sets one test's series
// apart from another's.
type SandboxErrors struct {
	Run   string
	prom  *servers.Prometheus
	gauge *prometheus.GaugeVec
}

// ServeSandboxErrors serves the series until the test ends.
func ServeSandboxErrors(t testing.TB, prom *servers.Prometheus, run string) *SandboxErrors {
	t.Helper()
	require.NotNil(t, prom, "the stack runs no Prometheus: testenv.Options{Prometheus: true}")
	s := &SandboxErrors{Run: run, prom: prom, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ate_test_sandbox_errors", Help: "The share of a pool's sandboxes that fail, as the test says.",
		ConstLabels: prometheus.Labels{"run": run},
	}, []string{"namespace", "pool"})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.gauge)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	job := "sandbox-errors-" + run
	require.NoError(t, prom.AddTarget(job, host, nil))
	t.Cleanup(func() { _ = prom.RemoveTarget(job, host) })
	return s
}

// Set says a pool's share of failing sandboxes.
func (s *SandboxErrors) Set(ns, pool string, v float64) { s.gauge.WithLabelValues(ns, pool).Set(v) }

// WaitScraped waits until Prometheus answers a pool's share as v.
func (s *SandboxErrors) WaitScraped(t testing.TB, ns, pool string, v float64) {
	t.Helper()
	q := fmt.Sprintf(`ate_test_sandbox_errors{run=%q, namespace=%q, pool=%q}`, s.Run, ns, pool)
	_, err := s.prom.WaitForQuery(context.Background(), q, time.Minute, func(got []promquery.Sample) bool {
		return len(got) == 1 && got[0].Value == v
	})
	require.NoError(t, err)
}

// Metric is an analysis' metric "errors": the worst share among the
// step's pools, at most max.
func (s *SandboxErrors) Metric(max string) v1alpha1.RolloutMetric {
	return v1alpha1.RolloutMetric{Name: "errors", Max: &max,
		Query: fmt.Sprintf(`max(ate_test_sandbox_errors{run=%q, namespace=~"{{.Namespaces}}", pool=~"{{.Pools}}"})`, s.Run)}
}
