// Command starter is the watch bridge: it watches WorkerPools and
// SandboxConfigs (not Deployments), starts the switch a pool's next move
// needs, wakes (or starts) the release workflow of a config in deletion,
// and, on its leader, keeps the operator workflow running. Its shape is
// the worker's: flags and environment, then starter.Main until SIGINT or
// SIGTERM. `starter preview --config NAME` instead prints, moving nothing,
// the pools a staged rollout of the config would move, step by step
// (preview.go).
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
	"ate.dev/orchestrator/internal/version"
	"ate.dev/orchestrator/starter"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "starter:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "preview" {
		return preview(args[1:])
	}
	var opts options.Options
	var sopts options.StarterOptions
	fs := flag.NewFlagSet("starter", flag.ExitOnError)
	opts.BindFlags(fs)
	sopts.BindFlags(fs)
	var leader options.LeaderElection
	leader.BindFlags(fs)
	printVersion := version.Flag(fs, "starter")
	_ = fs.Parse(args)
	if printVersion(os.Stdout) {
		return nil
	}
	if err := errors.Join(opts.Validate(), sopts.Validate(), leader.Validate()); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return starter.Main(ctx, opts, sopts, leader)
}
