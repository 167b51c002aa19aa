package starter

import (
	"context"
	"fmt"

	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/temporalconn"
)

// Main is the starter process, as cmd/starter's flags configure it, until
// ctx is done (SIGINT or SIGTERM): logs, probes and metrics, the Temporal
// connection, then Run.
func Main(ctx context.Context, opts options.Options, sopts options.StarterOptions, election options.LeaderElection) error {
	proc, err := opts.Process("starter")
	if err != nil {
		return err
	}
	log := proc.Log
	defer proc.Close()

	// Probes come up first, as the worker's do: while Temporal is
	// unreachable the starter is alive but not ready. (Its manager, built
	// once connected, would serve them only then, leaving the liveness
	// probe unanswered and the pod restarted while it waits.)
	endpoints, err := probes.ServeProcess(ctx, opts.HealthProbeBindAddress, opts.Metrics(), proc.Rest, proc.Temporal.Namespace, log)
	if err != nil {
		return err
	}
	if err := probes.ServePprof(ctx, opts.PprofBindAddress, log); err != nil {
		return fmt.Errorf("serving pprof on %s: %w", opts.PprofBindAddress, err)
	}
	c, err := temporalconn.Dial(ctx, proc.Temporal, log)
	if err != nil {
		return err
	}
	defer c.Close()
	endpoints.Connected(c)
	return Run(ctx, Config{Rest: proc.Rest, Temporal: c, ClusterName: opts.ClusterName, TaskQueue: opts.TaskQueue,
		Concurrency: sopts.StartConcurrency, LeaderElection: election.Election, OnNaming: proc.Named(ctx, endpoints.NamingCluster)})
}
