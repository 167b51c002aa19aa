package options

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/logging"
	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/tracing"
	"ate.dev/orchestrator/internal/wfapi"
)

// Process is what the worker and the starter set up alike from their
// options before they dial Temporal.
type Process struct {
	// Log writes to stderr in --log-format at --log-level, each line naming
	// the process; it is also slog's default and controller-runtime's
	// logger, so the cache's and the manager's lines look like the
	// product's.
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
	// Metrics labels every series the process's /metrics serves with its
	// cluster (--metrics-cluster-label): at once when --cluster-name names
	// it, else once Named is told the cluster is named.
	Metrics *metrics.ClusterRegistry
	// clusterName is --cluster-name.
	clusterName string
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
	log, err := o.Logger(os.Stderr, name)
	if err != nil {
		return nil, err
	}
	logging.Install(log)

	rest, err := o.RestConfig()
	if err != nil {
		return nil, err
	}
	copts, err := o.TemporalClientOptions(log)
	if err != nil {
		return nil, err
	}
	label := o.MetricsClusterLabel
	if label == "" {
		label = metrics.DefaultClusterLabel
	}
	// Before anything records a metric or serves them: the registry the
	// metrics server serves is the labelling one.
	reg, err := metrics.LabelClusterOnScrape(label)
	if err != nil {
		return nil, fmt.Errorf("--metrics-cluster-label: %w", err)
	}
	if o.ClusterName != "" {
		reg.SetCluster(o.ClusterName)
	}
	if copts.MetricsHandler, err = metrics.ForProcess(ctrlmetrics.Registry, name); err != nil {
		return nil, fmt.Errorf("recording the Temporal SDK's metrics in controller-runtime's registry: %w", err)
	}
	tr, err := tracing.Start(context.Background(), o.TracesExporter, name)
	if err != nil {
		return nil, err
	}
	if tr.Enabled() {
		log.Info("tracing on: exporting spans over OTLP")
	}
	tr.Install(rest, &copts)
	return &Process{Log: log, Rest: rest, Temporal: copts, Tracing: tr, Metrics: reg, clusterName: o.ClusterName}, nil
}

// TemporalClientOptions is the Temporal client options of the connection
// the options resolve to (temporalconn.Settings.ClientOptions), logging on
// log (nil: slog.Default()) where it came from. It validates the options
// first: a caller that skipped Validate is still refused with the flags'
// names, before a file is read.
func (o *Options) TemporalClientOptions(log *slog.Logger) (client.Options, error) {
	if err := o.Validate(); err != nil {
		return client.Options{}, fmt.Errorf("invalid Temporal options: %w", err)
	}
	return o.Temporal.ClientOptions(log)
}

// Named wraps report, the process's naming callback (its Run's OnNaming,
// kube.NamingWait.Report: each failed look's error, nil once named), so
// that once the cluster is named its name labels the process's metrics
// too. With --cluster-name they were labelled from the start; else the
// name is the kube-system namespace's UID, which the look that just
// succeeded read and which never changes, read once more here (Run keeps
// the scope it names to itself).
func (p *Process) Named(ctx context.Context, report func(error)) func(error) {
	return func(err error) {
		if report != nil {
			report(err)
		}
		if err != nil || p.clusterName != "" {
			return
		}
		cs, cerr := kubernetes.NewForConfig(p.Rest)
		if cerr == nil {
			var c wfapi.Cluster
			if c, cerr = kube.ClusterIdentity(ctx, cs, ""); cerr == nil {
				p.Metrics.SetCluster(string(c))
				return
			}
		}
		p.Log.Warn("the metrics carry no cluster label: could not read the cluster's identity again", "error", cerr)
	}
}

// Metrics is how the process serves /metrics.
func (o *Options) Metrics() probes.Metrics {
	return probes.Metrics{BindAddress: o.MetricsBindAddress, Secure: o.MetricsSecure, CertDir: o.MetricsCertDir}
}
