package options

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/promquery"
)

// The worker's Prometheus settings: flag over environment, none by
// default, and checked at start with promquery's errors, which name the
// flag.
func TestWorkerPrometheusOptions(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("t0ken"), 0o600))
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    promquery.Config
		wantErr string
	}{
		{name: "none by default"},
		{
			name: "from the environment",
			env:  map[string]string{"PROMETHEUS_URL": "http://prometheus:9090", "PROMETHEUS_BEARER_TOKEN_FILE": token},
			want: promquery.Config{URL: "http://prometheus:9090", BearerTokenFile: token},
		},
		{
			name: "flags override the environment",
			env:  map[string]string{"PROMETHEUS_URL": "http://prometheus:9090", "PROMETHEUS_BEARER_TOKEN_FILE": "/elsewhere"},
			args: []string{"--prometheus-url=http://127.0.0.1:9095/prom", "--prometheus-bearer-token-file=" + token},
			want: promquery.Config{URL: "http://127.0.0.1:9095/prom", BearerTokenFile: token},
		},
		{
			name:    "a URL that is not http",
			args:    []string{"--prometheus-url=prometheus:9090"},
			wantErr: "--prometheus-url (PROMETHEUS_URL) must be an http or https URL",
		},
		{
			name:    "a CA file without URL",
			env:     map[string]string{"PROMETHEUS_CA_FILE": "/etc/prometheus/ca.crt"},
			wantErr: "--prometheus-ca-file (PROMETHEUS_CA_FILE) set without --prometheus-url (PROMETHEUS_URL)",
		},
		{
			name:    "a token file that is not there",
			args:    []string{"--prometheus-url=https://prometheus", "--prometheus-bearer-token-file=/nonexistent/token"},
			wantErr: "--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE): reading the bearer token",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			clearWorkerEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var o Options
			var w WorkerOptions
			fs := flag.NewFlagSet("worker", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			w.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			err := w.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, w.Prometheus)
		})
	}
}

// Only the worker queries Prometheus: the starter's flags (and the
// options both binaries share) do not take them.
func TestPrometheusFlagsAreTheWorkers(t *testing.T) {
	shared := flag.NewFlagSet("starter", flag.ContinueOnError)
	var o Options
	var s StarterOptions
	o.BindFlags(shared)
	s.BindFlags(shared)
	worker := flag.NewFlagSet("worker", flag.ContinueOnError)
	var w WorkerOptions
	w.BindFlags(worker)
	for _, name := range []string{"prometheus-url", "prometheus-bearer-token-file", "prometheus-ca-file"} {
		require.Nil(t, shared.Lookup(name), "the starter takes --%s", name)
		require.NotNil(t, worker.Lookup(name), "the worker lacks --%s", name)
	}
}
