// Command worker is the product's worker (./worker) with more Temporal worker
// options set from $ATE_BENCH_WORKER_OPTIONS (JSON of worker.Options, e.g.
// {"MaxConcurrentWorkflowTaskPollers":16}), over the product's own. The bench
// runs it with -worker-options to measure what the product's defaults cost;
// everything else is the product's code path (workerapp.Main): the same
// flags, environment, clients, registration, metrics and probes.
package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/workerapp"
)

// EnvOptions holds the worker options as JSON.
const EnvOptions = "ATE_BENCH_WORKER_OPTIONS"

func main() {
	err := workerapp.Main(os.Args[1:], func(o *worker.Options) error {
		s := os.Getenv(EnvOptions)
		slog.Info("bench worker options", "options", s)
		if s == "" {
			return nil
		}
		// The fields it names replace the product's; the others stay.
		if err := json.Unmarshal([]byte(s), o); err != nil {
			return fmt.Errorf("parsing %s: %w", EnvOptions, err)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
