// Package tracing is the product's OpenTelemetry tracing: off unless the
// standard OTEL_* environment (or --otel-traces-exporter) asks for it, and
// then one trace per switch or release, from the starter's start through
// the workflow and each of its activities to each API request an activity
// makes.
//
// A nil *Tracing is tracing off: each of its methods then installs nothing
// (no interceptor, no wrapped transport), so a process without the OTEL_*
// variables runs exactly the code it runs without this package.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/version"
)

// The standard variables this package reads itself; the exporters, the
// resource and the sampler read the rest (OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_*...).
const (
	EnvExporter        = "OTEL_TRACES_EXPORTER"
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	ExporterOTLP       = "otlp"
	ExporterNone       = "none"
	protocolGRPC       = "grpc"
	protocolHTTP       = "http/protobuf"
	defaultServiceName = "ate-orchestrator"
)

// Span attributes of a switch's or a release's workflow span (and of the
// starter's span that starts it), from the workflow's search attributes:
// a trace backend finds a pool's switches by them.
const (
	AttrPool    = "ate.pool"
	AttrClass   = "ate.class"
	AttrFrom    = "ate.from"
	AttrTo      = "ate.to"
	AttrConfig  = "ate.config"
	AttrOutcome = "ate.outcome"
)

// Exporter says which span exporter the settings ask for, "" when tracing
// is off: exporter is --otel-traces-exporter, which defaults from
// OTEL_TRACES_EXPORTER. Tracing is off by default; "otlp" turns it on, and
// so does an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) unless the exporter is "none";
// OTEL_SDK_DISABLED=true turns it off whatever else is set.
func Exporter(exporter string, getenv func(string) string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return "", nil
	}
	switch e := strings.ToLower(strings.TrimSpace(exporter)); e {
	case ExporterNone:
		return "", nil
	case ExporterOTLP:
		return ExporterOTLP, nil
	case "":
		if getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != "" {
			return ExporterOTLP, nil
		}
		return "", nil
	default:
		return "", fmt.Errorf("--otel-traces-exporter (%s) %q is not supported: use %q or %q", EnvExporter, exporter, ExporterOTLP, ExporterNone)
	}
}

// protocol is the OTLP transport the settings ask for: http/protobuf, the
// specification's default, or grpc.
func protocol(getenv func(string) string) (string, error) {
	name := EnvTracesProtocol
	p := getenv(name)
	if p == "" {
		name, p = EnvProtocol, getenv(EnvProtocol)
	}
	switch p = strings.ToLower(strings.TrimSpace(p)); p {
	case "", protocolHTTP:
		return protocolHTTP, nil
	case protocolGRPC:
		return protocolGRPC, nil
	default:
		return "", fmt.Errorf("%s %q is not supported: use %q or %q", name, p, protocolHTTP, protocolGRPC)
	}
}

// Tracing is tracing turned on: the tracer provider and what it installs
// in the Temporal clients, workers and replayers and in the Kubernetes
// clients. nil is tracing off.
type Tracing struct {
	provider trace.TracerProvider
	temporal interceptor.Interceptor
	shutdown func(context.Context) error
}

// Start sets tracing up as the settings ask (see Exporter): nil, and
// nothing set up, when it is off. service names the process in the
// service.name resource attribute (ate-orchestrator-<service>), unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise. Spans are
// exported in batches; Shutdown flushes them.
func Start(ctx context.Context, exporter, service string) (*Tracing, error) {
	return start(ctx, exporter, service, os.Getenv)
}

func start(ctx context.Context, exporter, service string, getenv func(string) string) (*Tracing, error) {
	exp, err := Exporter(exporter, getenv)
	if err != nil || exp == "" {
		return nil, err
	}
	proto, err := protocol(getenv)
	if err != nil {
		return nil, err
	}
	// Both exporters read their endpoint, headers, timeout, compression and
	// certificates from the standard OTEL_EXPORTER_OTLP_* variables.
	var spans sdktrace.SpanExporter
	switch proto {
	case protocolGRPC:
		spans, err = otlptracegrpc.New(ctx)
	default:
		spans, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP %s span exporter: %w", proto, err)
	}
	// Later options win: the environment names the service if it says so.
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", defaultServiceName+"-"+service),
			attribute.String("service.version", version.Get())),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("the OpenTelemetry resource: %w", err)
	}
	// The sampler is the SDK's: OTEL_TRACES_SAMPLER (parentbased_always_on
	// by default) and OTEL_TRACES_SAMPLER_ARG.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	t, err := New(tp)
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	t.shutdown = tp.Shutdown
	return t, nil
}

// New is tracing through tp, which the caller shuts down (a test's
// provider with an in-memory exporter).
func New(tp trace.TracerProvider) (*Tracing, error) {
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
	if err != nil {
		return nil, fmt.Errorf("the Temporal tracing interceptor: %w", err)
	}
	return &Tracing{provider: tp, temporal: ti}, nil
}

// Enabled reports whether tracing is on.
func (t *Tracing) Enabled() bool { return t != nil }

// Shutdown flushes the spans not exported yet and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Install puts tracing on a process's clients: the traced transport on
// the Kubernetes clients built from rest, the client interceptors on the
// Temporal client dialled with copts. The worker's interceptors go through
// the options the worker and the replayer share (worker/temporal_options.go).
func (t *Tracing) Install(rest *rest.Config, copts *client.Options) {
	t.WrapREST(rest)
	copts.Interceptors = append(copts.Interceptors, t.ClientInterceptors()...)
}

// WrapREST makes the clients built from cfg trace each API request made on
// behalf of a traced operation (an activity's reads and writes), as a child
// of its span, and pass the trace on to the API server (traceparent). A
// request outside any trace (leader election, the caches' lists and
// watches) is not traced: alone in a trace of its own it would say nothing.
func (t *Tracing) WrapREST(cfg *rest.Config) {
	if t == nil {
		return
	}
	opts := []otelhttp.Option{
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return trace.SpanContextFromContext(r.Context()).IsValid()
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + r.URL.Path
		}),
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return otelhttp.NewTransport(rt, opts...) })
}
