package worker

import (
	"fmt"
	"time"

	"context"

	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/promquery"
	"ate.dev/orchestrator/internal/temporalconn"
)

// Main is the worker process, as cmd/worker's flags configure it, until ctx
// is done (SIGINT or SIGTERM): logs, probes and metrics, then Run, which
// dials Temporal beside the pool keeper.
func Main(ctx context.Context, opts options.Options, wopts options.WorkerOptions, election options.LeaderElection) error {
	proc, err := opts.Process("worker")
	if err != nil {
		return err
	}
	log := proc.Log
	defer proc.Close()

	// Validated with the flags; built before anything serves, so that a
	// CA bundle that cannot be read stops the start.
	prom, err := promquery.New(wopts.Prometheus)
	if err != nil {
		return err
	}
	if prom != nil {
		log.Info("the rollout analysis queries Prometheus", "url", prom.URL(), "bearerTokenFile", wopts.Prometheus.BearerTokenFile, "caFile", wopts.Prometheus.CAFile)
	}

	tw := TemporalWorkerOptionsWith(proc.Tracing)
	wopts.Apply(&tw)

	// Probes come up first: while Temporal is unreachable the worker is
	// alive but not ready.
	endpoints, err := probes.ServeProcess(ctx, opts.HealthProbeBindAddress, opts.Metrics(), proc.Rest, proc.Temporal.Namespace, log)
	if err != nil {
		return err
	}
	if err := probes.ServePprof(ctx, opts.PprofBindAddress, log); err != nil {
		return fmt.Errorf("serving pprof on %s: %w", opts.PprofBindAddress, err)
	}
	log.Info("Temporal worker options", "workflowTaskPollers", wopts.WorkflowTaskPollers,
		"workflowTaskPollerBehavior", wopts.WorkflowTaskPollerBehavior, "activityTaskPollers", tw.MaxConcurrentActivityTaskPollers, "maxConcurrentActivities", tw.MaxConcurrentActivityExecutionSize)
	// The pool keeper starts at once; Temporal is dialled beside it, with
	// retries, and the Temporal worker starts once it answers: a worker
	// (re)started during a Temporal outage keeps Deployments scaled and
	// statuses mirrored, and is not ready until Temporal is reachable.
	return Run(ctx, Config{Rest: proc.Rest, ClusterName: opts.ClusterName, TaskQueue: opts.TaskQueue, Log: log, Worker: tw,
		LeaderElection: election.Election, OperatorStartsPerSecond: wopts.OperatorStartsPerSecond,
		RolloutStepDeadline: time.Duration(wopts.RolloutStepDeadlineSeconds) * time.Second,
		Metrics:             activities.PrometheusQuerier(prom),
		RolloutAfterPoll:    time.Duration(wopts.RolloutAfterPollSeconds) * time.Second,
		Dial:                func(ctx context.Context) (client.Client, error) { return temporalconn.Dial(ctx, proc.Temporal, log) },
		OnConnected:         endpoints.Connected, OnNaming: proc.Named(ctx, endpoints.NamingCluster)})
}
