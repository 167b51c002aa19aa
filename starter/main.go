// Command starter is the watch bridge: it watches WorkerPools,
// SandboxConfigs and the pools' Deployments and starts the switch and release
// workflows. Its shape is the worker's: flags, probes, the Temporal
// connection, then internal/starterapp.Run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/starterapp"
	"ate.dev/orchestrator/internal/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "starter:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var opts options.Options
	fs := flag.NewFlagSet("starter", flag.ExitOnError)
	opts.BindFlags(fs)
	var leader options.LeaderElection
	leader.BindFlags(fs)
	printVersion := version.Flag(fs, "starter")
	_ = fs.Parse(args)
	if printVersion(os.Stdout) {
		return nil
	}
	if err := errors.Join(opts.Validate(), leader.Validate()); err != nil {
		return err
	}
	proc, err := opts.Process("starter")
	if err != nil {
		return err
	}
	log := proc.Log

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Probes come up first, as the worker's do: while Temporal is
	// unreachable the starter is alive but not ready. (The manager would
	// serve them only once connected, leaving the liveness probe unanswered
	// and the pod restarted while it waits.)
	var readiness probes.Connecting
	// Ready also needs the custom search attributes in the namespace: every
	// start would fail without them (the log says how to register them).
	attrs := &probes.SearchAttributes{Namespace: proc.Temporal.Namespace, Log: log}
	probes.Serve(ctx, opts.HealthProbeBindAddress, probes.All(readiness.Ready, attrs.Ready), nil, log)
	c, err := options.DialTemporal(ctx, proc.Temporal, log)
	if err != nil {
		return err
	}
	defer c.Close()
	readiness.Connected(c)
	go attrs.Watch(ctx, c)
	return starterapp.Run(ctx, starterapp.Config{
		Rest: proc.Rest, Temporal: c, TaskQueue: opts.TaskQueue,
		LeaderElection:     leader,
		MetricsBindAddress: opts.MetricsBindAddress, HealthProbeBindAddress: "0",
	})
}
