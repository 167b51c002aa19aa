package options

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/tracing"
)

// Process is what the worker and the starter set up alike from their
// options before they dial Temporal.
type Process struct {
	// Log writes JSON to stderr, each line naming the process; it is also
	// slog's default and controller-runtime's logger, so the cache's and the
	// manager's lines look like the product's.
	Log *slog.Logger
	// Rest reaches the Kubernetes API server.
	Rest *rest.Config
	// Temporal dials the Temporal server. Its metrics handler records the
	// SDK's metrics, and the product's recorded through the SDK, in
	// controller-runtime's registry, next to its own and client-go's: one
	// /metrics endpoint per process.
	Temporal client.Options
	// Tracing is the process's OpenTelemetry tracing, nil when off (the
	// default). When on, Rest and Temporal already carry it (a traced
	// transport, the client's tracing interceptors); the worker adds its
	// worker interceptors (worker.TemporalWorkerOptionsWith). Close flushes
	// its spans.
	Tracing *tracing.Tracing
}

// Close flushes what the process has not exported yet (its spans), for at
// most 5 s: a collector that is gone does not hold up the exit.
func (p *Process) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Tracing.Shutdown(ctx); err != nil {
		p.Log.Warn("could not flush the spans at exit", "error", err)
	}
}

// Process sets up logging and builds the clients' configuration of the
// process named name.
func (o *Options) Process(name string) (*Process, error) {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("process", name)
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))

	rest, err := o.RestConfig()
	if err != nil {
		return nil, err
	}
	copts, err := o.TemporalClientOptions()
	if err != nil {
		return nil, err
	}
	if copts.MetricsHandler, err = metrics.NewHandler(ctrlmetrics.Registry); err != nil {
		return nil, err
	}
	tr, err := tracing.Start(context.Background(), o.TracesExporter, name)
	if err != nil {
		return nil, err
	}
	if tr.Enabled() {
		log.Info("tracing on: exporting spans over OTLP")
	}
	tr.Install(rest, &copts)
	return &Process{Log: log, Rest: rest, Temporal: copts, Tracing: tr}, nil
}
