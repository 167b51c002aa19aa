package tracing

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/searchattr"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestExporter(t *testing.T) {
	tests := []struct {
		name     string
		flag     string
		env      map[string]string
		want     string
		wantErrs string
	}{
		{name: "nothing set: off"},
		{name: "an OTLP endpoint turns it on", env: map[string]string{EnvEndpoint: "http://collector:4318"}, want: ExporterOTLP},
		{name: "a traces endpoint turns it on", env: map[string]string{EnvTracesEndpoint: "http://collector:4318/v1/traces"}, want: ExporterOTLP},
		{name: "otlp turns it on", flag: "otlp", want: ExporterOTLP},
		{name: "otlp in capitals", flag: " OTLP ", want: ExporterOTLP},
		{name: "none wins over an endpoint", flag: "none", env: map[string]string{EnvEndpoint: "http://collector:4318"}},
		{name: "the SDK disabled wins over otlp", flag: "otlp", env: map[string]string{EnvSDKDisabled: "true"}},
		{name: "the SDK disabled false changes nothing", flag: "otlp", env: map[string]string{EnvSDKDisabled: "false"}, want: ExporterOTLP},
		{name: "an exporter of another kind", flag: "zipkin", wantErrs: `"zipkin" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Exporter(tt.flag, env(tt.env))
			if tt.wantErrs != "" {
				require.ErrorContains(t, err, tt.wantErrs)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestOffInstallsNothing: without the OTEL_* variables there is no
// Tracing, and a nil one installs nothing anywhere.
func TestOffInstallsNothing(t *testing.T) {
	tr, err := start(context.Background(), "", "worker", env(nil))
	require.NoError(t, err)
	require.Nil(t, tr)
	require.False(t, tr.Enabled())
	require.Nil(t, tr.ClientInterceptors())
	require.Nil(t, tr.WorkerInterceptors())
	cfg := &rest.Config{Host: "https://example"}
	tr.WrapREST(cfg)
	require.Nil(t, cfg.WrapTransport)
	require.NoError(t, tr.Shutdown(context.Background()))
}

// TestOnInstalls: an endpoint sets up an exporter of the protocol asked
// for, and installs the interceptors and the traced transport.
func TestOnInstalls(t *testing.T) {
	for _, proto := range []string{"", "http/protobuf", "grpc"} {
		t.Run("protocol "+proto, func(t *testing.T) {
			vars := map[string]string{EnvEndpoint: "http://127.0.0.1:4318", EnvProtocol: proto}
			tr, err := start(context.Background(), "", "worker", env(vars))
			require.NoError(t, err)
			require.True(t, tr.Enabled())
			require.Len(t, tr.ClientInterceptors(), 2)
			require.Len(t, tr.WorkerInterceptors(), 2)
			cfg := &rest.Config{Host: "https://example"}
			tr.WrapREST(cfg)
			require.NotNil(t, cfg.WrapTransport)
			require.NoError(t, tr.Shutdown(context.Background()))
		})
	}
	_, err := start(context.Background(), "otlp", "worker", env(map[string]string{EnvProtocol: "http/json"}))
	require.ErrorContains(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL "http/json" is not supported`)
	_, err = start(context.Background(), "otlp", "worker", env(map[string]string{EnvProtocol: "grpc", EnvTracesProtocol: "thrift"}))
	require.ErrorContains(t, err, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "thrift" is not supported`)
}

// TestRESTRequestsOnlyInATrace: the traced transport records the requests
// made within a span (an activity's), as its children, and leaves the
// others (leader election, the caches' watches) alone.
func TestRESTRequestsOnlyInATrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr, err := New(tp)
	require.NoError(t, err)
	cfg := &rest.Config{}
	tr.WrapREST(cfg)
	var traceparent string
	rt := cfg.WrapTransport(roundTripper(func(r *http.Request) (*http.Response, error) {
		traceparent = r.Header.Get("traceparent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	}))
	do := func(ctx context.Context) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://api/apis/ate.dev/v1alpha1/sandboxconfigs/x", nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	do(context.Background())
	require.Empty(t, spans.GetSpans(), "a request outside a trace")
	require.Empty(t, traceparent)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "RunActivity:ReadConfig")
	do(ctx)
	parent.End()
	got := spans.GetSpans()
	require.Len(t, got, 2)
	require.Equal(t, "GET /apis/ate.dev/v1alpha1/sandboxconfigs/x", got[0].Name)
	require.Equal(t, parent.SpanContext().SpanID(), got[0].Parent.SpanID())
	require.Equal(t, parent.SpanContext().TraceID(), got[0].SpanContext.TraceID())
	require.Contains(t, traceparent, parent.SpanContext().TraceID().String(), "the trace passed on to the API server")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAttributes(t *testing.T) {
	sa := temporal.NewSearchAttributes(
		searchattr.WorkerPoolKey.ValueSet("ns/pool"),
		searchattr.SandboxClassKey.ValueSet("gvisor"),
		searchattr.ToConfigKey.ValueSet("b"),
		searchattr.OutcomeKey.ValueSet("confirmed"),
	)
	got := map[string]string{}
	for _, kv := range Attributes(sa) {
		got[string(kv.Key)] = kv.Value.AsString()
	}
	require.Equal(t, map[string]string{AttrPool: "ns/pool", AttrClass: "gvisor", AttrTo: "b", AttrOutcome: "confirmed"}, got)
	require.Empty(t, Attributes(temporal.SearchAttributes{}))
}
