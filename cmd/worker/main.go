// Command worker is the Temporal worker: it hosts the switch and release
// workflows and the activities that act on the API server, and its leader
// keeps the pools' Deployments and plain status.
//
// Every command of the product has this shape: its flags and environment,
// then its package's Main (here worker.Main) until SIGINT or SIGTERM.
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
	"ate.dev/orchestrator/worker"
)

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return worker.Main(ctx, opts, wopts, leader)
}
