// Command teardown removes the protection finalizer
// sandboxconfig.ate.dev/workerpool-protection from every SandboxConfig. Run it
// when uninstalling, after the worker and the starter are gone: nothing else
// releases the finalizer then. It keeps other finalizers, skips configs
// without it, retries conflicts and treats a missing CRD as done.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"ate.dev/orchestrator/internal/logging"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/teardown"
	"ate.dev/orchestrator/internal/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "teardown:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var opts options.Options
	fs := flag.NewFlagSet("teardown", flag.ExitOnError)
	// Only the API server's flags and logging's: teardown neither talks to
	// Temporal nor serves probes, and -h should not offer settings it ignores.
	opts.BindKubeFlags(fs)
	printVersion := version.Flag(fs, "teardown")
	_ = fs.Parse(args)
	if printVersion(os.Stdout) {
		return nil
	}
	// Its logs (client-go's, through controller-runtime's logger) go to
	// stderr; the report alone to stdout.
	log, err := opts.Logger(os.Stderr, "teardown")
	if err != nil {
		return err
	}
	logging.Install(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := teardown.Main(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Println(rep)
	return nil
}
