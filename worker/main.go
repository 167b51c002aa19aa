// Command worker is the Temporal worker: it hosts the pool, switch and
// release workflows and the activities that act on the API server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/worker"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/workerapp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts options.Options
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	opts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := opts.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("process", "worker")
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler())) // the cache's logs, in the same format

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
	var tc = &lazyClient{}
	probes.Serve(ctx, opts.HealthProbeBindAddress, tc.ready, nil, log)
	probes.Serve(ctx, opts.MetricsBindAddress, func(context.Context) error { return nil }, ctrlmetrics.Registry, log)
	c, err := options.DialTemporal(ctx, copts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	tc.set(c)
	return workerapp.Run(ctx, workerapp.Config{
		Rest: rest, Temporal: c, TaskQueue: opts.TaskQueue, Log: log,
		Worker: worker.Options{Interceptors: crashhook.Interceptors()},
	})
}
