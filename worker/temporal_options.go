package worker

import (
	"slices"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/internal/tracing"
)

// Everything that changes how a history is produced or read (interceptors;
// the client's data and failure converters, which the worker leaves at the
// SDK's defaults) is built here once, for the worker and for the replayer:
// a replay test that ran with other settings than the worker would pass on
// histories the worker cannot replay.

// interceptors are the worker's workflow and activity interceptors: the
// tracing interceptors when tracing is on (tr not nil; first, so that the
// others run inside the workflow's and the activity's spans), then the
// crash hook of crashtest builds.
func interceptors(tr *tracing.Tracing) []interceptor.WorkerInterceptor {
	return slices.Concat(tr.WorkerInterceptors(), crashhook.Interceptors())
}

// TemporalWorkerOptions returns the Temporal worker options every worker
// starts from, with tracing off; flags and tuning are applied over them.
func TemporalWorkerOptions() worker.Options { return TemporalWorkerOptionsWith(nil) }

// TemporalWorkerOptionsWith returns the Temporal worker options with
// tracing tr (nil: off).
func TemporalWorkerOptionsWith(tr *tracing.Tracing) worker.Options {
	return worker.Options{Interceptors: interceptors(tr)}
}

// ReplayerOptions returns the replayer's options: the worker's
// interceptors, with tracing off.
func ReplayerOptions() worker.WorkflowReplayerOptions { return ReplayerOptionsWith(nil) }

// ReplayerOptionsWith returns the replayer's options with tracing tr (nil:
// off), as TemporalWorkerOptionsWith(tr) gives the worker.
func ReplayerOptionsWith(tr *tracing.Tracing) worker.WorkflowReplayerOptions {
	return worker.WorkflowReplayerOptions{Interceptors: interceptors(tr)}
}
