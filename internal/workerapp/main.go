package workerapp

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/worker"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/crashhook"
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
	// The pool reconciler runs on the leader; every replica runs
	// workflows and activities.
	var leader options.LeaderElection
	leader.BindFlags(fs)
	_ = fs.Parse(args)
	if err := errors.Join(opts.Validate(), wopts.Validate()); err != nil {
		return err
	}
	proc, err := opts.Process("worker")
	if err != nil {
		return err
	}
	log := proc.Log

	tw := worker.Options{Interceptors: crashhook.Interceptors()}
	wopts.Apply(&tw)
	if tune != nil {
		if err := tune(&tw); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Probes come up first: while Temporal is unreachable the worker is
	// alive but not ready.
	var readiness probes.Connecting
	probes.Serve(ctx, opts.HealthProbeBindAddress, readiness.Ready, nil, log)
	probes.Serve(ctx, opts.MetricsBindAddress, func(context.Context) error { return nil }, ctrlmetrics.Registry, log)
	c, err := options.DialTemporal(ctx, proc.Temporal, log)
	if err != nil {
		return err
	}
	defer c.Close()
	readiness.Connected(c)
	log.Info("Temporal worker options", "workflowTaskPollers", tw.MaxConcurrentWorkflowTaskPollers,
		"activityTaskPollers", tw.MaxConcurrentActivityTaskPollers, "maxConcurrentActivities", tw.MaxConcurrentActivityExecutionSize)
	return Run(ctx, Config{Rest: proc.Rest, Temporal: c, TaskQueue: opts.TaskQueue, Log: log, Worker: tw,
		LeaderElection: leader.Enabled, LeaderElectionNamespace: leader.Namespace})
}
