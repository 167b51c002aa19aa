// Command worker is the Temporal worker: it hosts the switch and release
// workflows and the activities that act on the API server, and its leader
// keeps the pools' Deployments and plain status.
//
// Every process of the product has this shape: flags and environment, logs,
// probes, the Temporal connection, then the process's Run (here
// internal/workerapp.Run, which dials Temporal beside the pool keeper) until
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/version"
	"ate.dev/orchestrator/internal/workerapp"
)

// tuneWorker, when set, adjusts the Temporal worker's options last. Only the
// bench's build sets it (tune_bench.go), to measure options the flags do not
// cover on the product's own code path.
var tuneWorker func(*worker.Options) error

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var opts options.Options
	var wopts options.WorkerOptions
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	opts.BindFlags(fs)
	wopts.BindFlags(fs)
	// The pool reconciler runs on the leader; every replica runs
	// workflows and activities.
	var leader options.LeaderElection
	leader.BindFlags(fs)
	printVersion := version.Flag(fs, "worker")
	_ = fs.Parse(args)
	if printVersion(os.Stdout) {
		return nil
	}
	if err := errors.Join(opts.Validate(), wopts.Validate(), leader.Validate()); err != nil {
		return err
	}
	proc, err := opts.Process("worker")
	if err != nil {
		return err
	}
	log := proc.Log

	tw := workerapp.TemporalWorkerOptions()
	wopts.Apply(&tw)
	if tuneWorker != nil {
		if err := tuneWorker(&tw); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Probes come up first: while Temporal is unreachable the worker is
	// alive but not ready.
	var readiness probes.Connecting
	// Ready also needs the custom search attributes in the namespace: every
	// start would fail without them (the log says how to register them).
	attrs := &probes.SearchAttributes{Namespace: proc.Temporal.Namespace, Log: log}
	probes.Serve(ctx, opts.HealthProbeBindAddress, probes.All(readiness.Ready, attrs.Ready), nil, log)
	probes.Serve(ctx, opts.MetricsBindAddress, func(context.Context) error { return nil }, ctrlmetrics.Registry, log)
	log.Info("Temporal worker options", "workflowTaskPollers", tw.MaxConcurrentWorkflowTaskPollers,
		"activityTaskPollers", tw.MaxConcurrentActivityTaskPollers, "maxConcurrentActivities", tw.MaxConcurrentActivityExecutionSize)
	// The pool keeper starts at once; Temporal is dialled beside it, with
	// retries, and the Temporal worker starts once it answers: a worker
	// (re)started during a Temporal outage keeps Deployments scaled and
	// statuses mirrored, and is not ready until Temporal is reachable.
	return workerapp.Run(ctx, workerapp.Config{Rest: proc.Rest, TaskQueue: opts.TaskQueue, Log: log, Worker: tw,
		LeaderElection:          leader,
		OperatorStartsPerSecond: wopts.OperatorStartsPerSecond,
		Dial:                    func(ctx context.Context) (client.Client, error) { return options.DialTemporal(ctx, proc.Temporal, log) },
		OnConnected: func(c client.Client) {
			readiness.Connected(c)
			go attrs.Watch(ctx, c)
		}})
}
