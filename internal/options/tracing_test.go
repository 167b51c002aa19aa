package options

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/temporalconn"
	"ate.dev/orchestrator/internal/tracing"
)

// TestProcessTracing: with no OTEL_* variable a process installs no tracing
// at all: no traced transport on the Kubernetes clients, no interceptor on
// the Temporal client (the worker's side: worker's TestNoTracingByDefault).
// An OTLP endpoint installs both; "none" keeps it off.
func TestProcessTracing(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		on   bool
	}{
		{name: "no OTEL variable: off"},
		{name: "an OTLP endpoint: on", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318"}, on: true},
		{name: "the flag: on", args: []string{"--otel-traces-exporter=otlp"}, on: true},
		{name: "exporter none: off", env: map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318", tracing.EnvExporter: "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for _, k := range []string{tracing.EnvEndpoint, tracing.EnvTracesEndpoint, tracing.EnvSDKDisabled, tracing.EnvProtocol, tracing.EnvTracesProtocol} {
				t.Setenv(k, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			t.Setenv("KUBECONFIG", writeKubeconfig(t, t.TempDir(), "kubeconfig", "https://127.0.0.1:6443"))
			var o Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			proc, err := o.Process("worker")
			require.NoError(t, err)
			defer proc.Close()
			if !tt.on {
				require.Nil(t, proc.Tracing)
				require.Nil(t, proc.Rest.WrapTransport, "no traced transport")
				require.Empty(t, proc.Temporal.Interceptors, "no Temporal client interceptor")
				return
			}
			require.NotNil(t, proc.Tracing)
			require.NotNil(t, proc.Rest.WrapTransport)
			require.Len(t, proc.Temporal.Interceptors, 2)
		})
	}
}

func TestValidateTracesExporter(t *testing.T) {
	o := Options{Temporal: temporalconn.Settings{Address: "a:1", Namespace: "ns"}, TaskQueue: "tq", TracesExporter: "jaeger"}
	require.ErrorContains(t, o.Validate(), `--otel-traces-exporter (OTEL_TRACES_EXPORTER) "jaeger" is not supported`)
}
