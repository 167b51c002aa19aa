// Command worker is the product's worker (./worker) with the Temporal worker
// options set from $ATE_BENCH_WORKER_OPTIONS (JSON of worker.Options, e.g.
// {"MaxConcurrentWorkflowTaskPollers":8}). The bench runs it with
// -worker-options to measure what the product's defaults cost; everything
// else is the product's code: the same flags, environment, clients,
// registration, metrics and probes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	"ate.dev/orchestrator/internal/workerapp"
)

// EnvOptions holds the worker options as JSON.
const EnvOptions = "ATE_BENCH_WORKER_OPTIONS"

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
	var wopts worker.Options
	if s := os.Getenv(EnvOptions); s != "" {
		if err := json.Unmarshal([]byte(s), &wopts); err != nil {
			return fmt.Errorf("parsing %s: %w", EnvOptions, err)
		}
	}
	wopts.Interceptors = crashhook.Interceptors()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("process", "worker")
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	log.Info("worker options", "options", os.Getenv(EnvOptions))

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
	if copts.MetricsHandler, err = metrics.NewHandler(ctrlmetrics.Registry); err != nil {
		return err
	}
	var tc lazyClient
	probes.Serve(ctx, opts.HealthProbeBindAddress, tc.ready, nil, log)
	probes.Serve(ctx, opts.MetricsBindAddress, func(context.Context) error { return nil }, ctrlmetrics.Registry, log)
	c, err := options.DialTemporal(ctx, copts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	tc.set(c)
	return workerapp.Run(ctx, workerapp.Config{Rest: rest, Temporal: c, TaskQueue: opts.TaskQueue, Log: log, Worker: wopts})
}

// lazyClient answers readiness before and after the Temporal client exists
// (as ./worker's).
type lazyClient struct{ c atomic.Pointer[client.Client] }

func (l *lazyClient) set(c client.Client) { l.c.Store(&c) }

func (l *lazyClient) ready(ctx context.Context) error {
	c := l.c.Load()
	if c == nil {
		return errors.New("not connected to Temporal yet")
	}
	return probes.TemporalReady(*c)(ctx)
}
