package workerapp

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
)

// Main is the worker process, given its command-line arguments: flags and
// environment, logs, probes, metrics, the Temporal connection, then Run
// until SIGINT or SIGTERM. tune, when not nil, adjusts the Temporal worker's
// options last: the bench's worker sets options the flags do not cover.
func Main(args []string, tune func(*worker.Options) error) error {
	var opts options.Options
	var wopts options.WorkerOptions
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	opts.BindFlags(fs)
	wopts.BindFlags(fs)
	_ = fs.Parse(args)
	if err := errors.Join(opts.Validate(), wopts.Validate()); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("process", "worker")
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler())) // the cache's logs, in the same format

	tw := worker.Options{Interceptors: crashhook.Interceptors()}
	wopts.Apply(&tw)
	if tune != nil {
		if err := tune(&tw); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rest, err := opts.RestConfig()
	if err != nil {
		return err
	}
	copts, err := opts.TemporalClientOptions()
	if err != nil {
		return err
	}
	// The SDK's metrics, and the product's recorded through it, next to
	// controller-runtime's and client-go's.
	if copts.MetricsHandler, err = metrics.NewHandler(ctrlmetrics.Registry); err != nil {
		return err
	}
	// Probes come up first: while Temporal is unreachable the worker is
	// alive but not ready.
	var tc lazyClient
	probes.Serve(ctx, opts.HealthProbeBindAddress, tc.ready, nil, log)
	probes.Serve(ctx, opts.MetricsBindAddress, func(context.Context) error { return nil }, ctrlmetrics.Registry, log)
	c, err := options.DialTemporal(ctx, copts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	tc.set(c)
	log.Info("Temporal worker options", "workflowTaskPollers", tw.MaxConcurrentWorkflowTaskPollers,
		"activityTaskPollers", tw.MaxConcurrentActivityTaskPollers, "maxConcurrentActivities", tw.MaxConcurrentActivityExecutionSize)
	return Run(ctx, Config{Rest: rest, Temporal: c, TaskQueue: opts.TaskQueue, Log: log, Worker: tw})
}

// lazyClient answers readiness before and after the Temporal client exists.
type lazyClient struct{ c atomic.Pointer[client.Client] }

func (l *lazyClient) set(c client.Client) { l.c.Store(&c) }

func (l *lazyClient) ready(ctx context.Context) error {
	c := l.c.Load()
	if c == nil {
		return errors.New("not connected to Temporal yet")
	}
	return probes.TemporalReady(*c)(ctx)
}
