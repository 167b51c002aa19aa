package localstack

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/promquery"
)

// TestPrometheusIsAComponentOfTheStack: with Options.Prometheus the stack
// runs a Prometheus that scrapes its API server with the stack's admin
// client certificate (up is 1 only if the API server let it read
// /metrics), and Stop stops it.
func TestPrometheusIsAComponentOfTheStack(t *testing.T) {
	s, err := Start(context.Background(), Options{
		Dir: t.TempDir(), NoTemporal: true, Prometheus: true,
		KubeBinDir: os.Getenv("KUBEBUILDER_ASSETS"),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })
	require.NotNil(t, s.Prometheus)
	require.NotEmpty(t, s.Kube.RestConfig.CertData, "the stack's admin authenticates with a client certificate")

	// The API server is scraped every 15 s, its first scrape at a point
	// of that interval of Prometheus' choosing.
	_, err = s.Prometheus.WaitForQuery(context.Background(), `up{job="kube-apiserver"}`, time.Minute, func(got []promquery.Sample) bool {
		return len(got) == 1 && got[0].Value == 1
	})
	require.NoError(t, err)
	got, err := s.Prometheus.Client().Query(context.Background(), `count(apiserver_request_total) > 0`, time.Time{})
	require.NoError(t, err)
	require.Len(t, got, 1, "the API server's own series are stored")

	require.NoError(t, s.Stop())
	require.False(t, s.Prometheus.Running())
}
