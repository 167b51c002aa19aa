// Command starter is the watch bridge: it watches WorkerPools,
// SandboxConfigs and the pools' Deployments and signals the workflows.
package main

import (
	"context"
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
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/starterapp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "starter:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts options.Options
	fs := flag.NewFlagSet("starter", flag.ExitOnError)
	opts.BindFlags(fs)
	leaderElect := fs.Bool("leader-elect", envBool("LEADER_ELECT"), "elect a leader among starter replicas, so two replicas are safe (env LEADER_ELECT)")
	leaderNS := fs.String("leader-election-namespace", os.Getenv("LEADER_ELECTION_NAMESPACE"), "namespace of the leader election Lease; defaults to the pod's namespace (env LEADER_ELECTION_NAMESPACE)")
	_ = fs.Parse(os.Args[1:])
	if err := opts.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("process", "starter")
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))

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
	// Probes come up first, as the worker's do: while Temporal is
	// unreachable the starter is alive but not ready. (The manager would
	// serve them only once connected, leaving the liveness probe unanswered
	// and the pod restarted while it waits.)
	var connected atomic.Pointer[client.Client]
	probes.Serve(ctx, opts.HealthProbeBindAddress, func(ctx context.Context) error {
		c := connected.Load()
		if c == nil {
			return errors.New("not connected to Temporal yet")
		}
		return probes.TemporalReady(*c)(ctx)
	}, nil, log)
	c, err := options.DialTemporal(ctx, copts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	connected.Store(&c)
	return starterapp.Run(ctx, starterapp.Config{
		Rest: rest, Temporal: c, TaskQueue: opts.TaskQueue,
		LeaderElection: *leaderElect, LeaderElectionNamespace: *leaderNS,
		MetricsBindAddress: opts.MetricsBindAddress, HealthProbeBindAddress: "0",
	})
}

func envBool(name string) bool {
	v := os.Getenv(name)
	return v == "1" || v == "true"
}
