package worker

import (
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/crashhook"
)

// Everything that changes how a history is produced or read (interceptors;
// the client's data and failure converters, which the worker leaves at the
// SDK's defaults) is built here once, for the worker and for the replayer:
// a replay test that ran with other settings than the worker would pass on
// histories the worker cannot replay.

// interceptors are the worker's workflow and activity interceptors.
func interceptors() []interceptor.WorkerInterceptor { return crashhook.Interceptors() }

// TemporalWorkerOptions returns the Temporal worker options every worker
// starts from; flags and tuning are applied over them.
func TemporalWorkerOptions() worker.Options {
	return worker.Options{Interceptors: interceptors()}
}

// ReplayerOptions returns the replayer's options: the worker's interceptors.
func ReplayerOptions() worker.WorkflowReplayerOptions {
	return worker.WorkflowReplayerOptions{Interceptors: interceptors()}
}
