package promquery_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/promquery"
)

// The client against the real Prometheus (hack/tools/prometheus), which
// scrapes itself: each result type as the server really sends it.
func TestQueryARealPrometheus(t *testing.T) {
	bin, err := servers.PrometheusBinary()
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := servers.NewPrometheus(servers.PrometheusConfig{Binary: bin, Dir: dir, LogFile: filepath.Join(dir, "prometheus.log")})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { _ = p.Stop() })
	// Its first scrape of itself.
	_, err = p.WaitForQuery(ctx, `up{job="prometheus"}`, 30*time.Second, nil)
	require.NoError(t, err)

	c, err := promquery.New(promquery.Config{URL: p.URL()})
	require.NoError(t, err)
	tests := []struct {
		query   string
		want    []promquery.Sample
		wantErr string
	}{
		{query: `up{job="prometheus"}`, want: []promquery.Sample{{Labels: `up{instance="` + p.Address() + `", job="prometheus"}`, Value: 1}}},
		{query: `sum(up{job="prometheus"})`, want: []promquery.Sample{{Labels: `{}`, Value: 1}}},
		{query: `scalar(up{job="prometheus"}) * 3`, want: []promquery.Sample{{Labels: ``, Value: 3}}},
		{query: `up{job="no such job"}`, want: []promquery.Sample{}},
		{query: `up{job="prometheus"}[1m]`, wantErr: "the result is a matrix"},
		{query: `"a string"`, wantErr: "string"},
		{query: `sum(up`, wantErr: "bad_data"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := c.Query(ctx, tt.query, time.Now())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, p.URL())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
