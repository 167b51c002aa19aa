//go:build benchtune

package worker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/worker"
)

// envWorkerOptions holds Temporal worker options as JSON (e.g.
// {"MaxConcurrentWorkflowTaskPollers":16}); the fields it names replace the
// product's, the others stay. The bench builds the worker with
// -tags benchtune and sets it with its -worker-options flag.
const envWorkerOptions = "ATE_BENCH_WORKER_OPTIONS"

func init() {
	tuneWorker = func(o *worker.Options) error {
		s := os.Getenv(envWorkerOptions)
		if s == "" {
			return nil
		}
		slog.Info("bench worker options", "options", s)
		if err := json.Unmarshal([]byte(s), o); err != nil {
			return fmt.Errorf("parsing %s: %w", envWorkerOptions, err)
		}
		if o.MaxConcurrentWorkflowTaskPollers > 0 && o.WorkflowTaskPollerBehavior != nil {
			// A fixed count named: fixed pollers (the SDK takes one or the
			// other).
			o.WorkflowTaskPollerBehavior = nil
		}
		return nil
	}
}
