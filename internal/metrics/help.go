package metrics

// help is the HELP text of every metric the handler exports: the product's
// own (recorded through the SDK so that workflow code records them once,
// not once per replay) and each metric of the Temporal Go SDK. A name not
// listed still exports, with a HELP that says it is undocumented here;
// TestHelpCoversTheSDK keeps the list in step with the SDK.
var help = map[string]string{
	// The product's.
	"ate_switches_total":          "Switch workflows ended, by outcome (confirmed, rolled back, superseded, pool gone, up to date) and sandbox_class.",
	"ate_switch_duration_seconds": "Time from a switch workflow's start to its end, by outcome and sandbox_class.",
	"ate_releases_total":          "Release workflows ended, by outcome (released, not needed).",
	"ate_release_wait_seconds":    "Time a SandboxConfig in deletion waited for its release, from its deletion mark to the release workflow's end, by outcome.",
	"ate_rollout_halts_total":     "Staged rollouts halted (a switch that failed, a failing gate, a pool not Available by the step's deadline), by sandbox_config.",
	"ate_rollout_rollbacks_total": "Staged rollouts rolled back (a step failed under spec.rollout.onFailure RollBack: its analysis, its gate, a switch, its deadline), by sandbox_config.",

	// The Temporal Go SDK's (go.temporal.io/sdk/internal/common/metrics).
	"temporal_workflow_completed_total":                        "Workflow executions completed successfully, by workflow_type.",
	"temporal_workflow_canceled_total":                         "Workflow executions canceled, by workflow_type.",
	"temporal_workflow_failed_total":                           "Workflow executions failed, by workflow_type.",
	"temporal_workflow_continue_as_new_total":                  "Workflow executions continued as new, by workflow_type.",
	"temporal_workflow_endtoend_latency_seconds":               "Time from a workflow execution's start to its close, by workflow_type.",
	"temporal_workflow_task_replay_latency_seconds":            "Time to replay a workflow's history when a workflow task is not served from the sticky cache.",
	"temporal_workflow_task_queue_poll_empty_total":            "Workflow task polls that returned no task (long poll timed out).",
	"temporal_workflow_task_queue_poll_succeed_total":          "Workflow task polls that returned a task.",
	"temporal_workflow_task_schedule_to_start_latency_seconds": "Time a workflow task waited in the task queue before a worker picked it up.",
	"temporal_workflow_task_execution_latency_seconds":         "Time the worker spent processing a workflow task.",
	"temporal_workflow_task_execution_failed_total":            "Workflow tasks that failed (panic, unknown workflow type, non-determinism), by workflow_type and failure_reason; the server retries them.",
	"temporal_workflow_task_no_completion_total":               "Workflow tasks processed without a completion sent to the server.",
	"temporal_activity_poll_no_task_total":                     "Activity task polls that returned no task.",
	"temporal_activity_schedule_to_start_latency_seconds":      "Time an activity task waited in the task queue before a worker picked it up, by activity_type.",
	"temporal_activity_execution_failed_total":                 "Activity attempts that failed (each failed attempt, retried or not), by activity_type and workflow_type.",
	"temporal_unregistered_activity_invocation_total":          "Activity tasks for an activity type this worker has not registered.",
	"temporal_activity_execution_latency_seconds":              "Time an activity attempt ran, by activity_type.",
	"temporal_activity_succeed_endtoend_latency_seconds":       "Time from an activity's scheduling to its successful completion, retries included, by activity_type.",
	"temporal_activity_task_error_total":                       "Activity tasks the worker could not process or report.",
	"temporal_local_activity_total":                            "Local activity attempts started, by activity_type.",
	"temporal_local_activity_canceled_total":                   "Local activities canceled (deprecated name of temporal_local_activity_execution_cancelled_total).",
	"temporal_local_activity_execution_cancelled_total":        "Local activities canceled, by activity_type.",
	"temporal_local_activity_failed_total":                     "Local activity attempts failed (deprecated name of temporal_local_activity_execution_failed_total).",
	"temporal_local_activity_execution_failed_total":           "Local activity attempts that failed (each failed attempt, retried or not), by activity_type and workflow_type.",
	"temporal_local_activity_error_total":                      "Local activities that ended in an error the worker could not process.",
	"temporal_local_activity_execution_latency_seconds":        "Time a local activity attempt ran, by activity_type.",
	"temporal_local_activity_succeed_endtoend_latency_seconds": "Time from a local activity's scheduling to its successful completion, retries included, by activity_type.",
	"temporal_corrupted_signals_total":                         "Signals dropped because their payload could not be decoded.",
	"temporal_worker_start_total":                              "Temporal workers started in this process.",
	"temporal_worker_task_slots_available":                     "Free task slots of the worker, by worker_type.",
	"temporal_worker_task_slots_used":                          "Task slots in use, by worker_type.",
	"temporal_poller_start_total":                              "Pollers started, by poller_type.",
	"temporal_num_pollers":                                     "Pollers currently polling the task queue, by poller_type.",
	"temporal_request_total":                                   "Requests to the Temporal frontend (not long polls), by operation.",
	"temporal_request_failure_total":                           "Failed requests to the Temporal frontend, by operation and status_code.",
	"temporal_request_latency_seconds":                         "Latency of requests to the Temporal frontend, by operation.",
	"temporal_long_request_total":                              "Long-poll requests to the Temporal frontend, by operation.",
	"temporal_long_request_failure_total":                      "Failed long-poll requests to the Temporal frontend, by operation and status_code.",
	"temporal_long_request_latency_seconds":                    "Latency of long-poll requests to the Temporal frontend, by operation.",
	// Per attempt, retries included (the SDK's gRPC interceptor, suffix "_attempt").
	"temporal_request_attempt_total":                        "Attempts of requests to the Temporal frontend (not long polls), retries included, by operation.",
	"temporal_request_failure_attempt_total":                "Failed attempts of requests to the Temporal frontend, retries included, by operation and status_code.",
	"temporal_request_latency_attempt_seconds":              "Latency of each attempt of a request to the Temporal frontend, by operation.",
	"temporal_long_request_attempt_total":                   "Attempts of long-poll requests to the Temporal frontend, retries included, by operation.",
	"temporal_long_request_failure_attempt_total":           "Failed attempts of long-poll requests to the Temporal frontend, by operation and status_code.",
	"temporal_long_request_latency_attempt_seconds":         "Latency of each attempt of a long-poll request to the Temporal frontend, by operation.",
	"temporal_resource_slots_cpu_usage":                     "CPU use the SDK's resource-based slot tuner sees (unused by the orchestrator's fixed slots).",
	"temporal_resource_slots_mem_usage":                     "Memory use the SDK's resource-based slot tuner sees (unused by the orchestrator's fixed slots).",
	"temporal_request_resource_exhausted_total":             "Requests refused by the Temporal frontend as resource exhausted (rate limits), by operation and cause.",
	"temporal_long_request_resource_exhausted_total":        "Long-poll requests refused as resource exhausted, by operation and cause.",
	"temporal_sticky_cache_hit_total":                       "Workflow tasks served from the sticky cache (no replay).",
	"temporal_sticky_cache_miss_total":                      "Workflow tasks that missed the sticky cache and replayed the history.",
	"temporal_sticky_cache_total_forced_eviction_total":     "Workflows evicted from the sticky cache to make room.",
	"temporal_sticky_cache_size":                            "Workflows in the sticky cache.",
	"temporal_workflow_active_thread_count":                 "Workflow goroutines alive in the sticky cache.",
	"temporal_nexus_poll_no_task_total":                     "Nexus task polls that returned no task.",
	"temporal_nexus_task_schedule_to_start_latency_seconds": "Time a Nexus task waited before a worker picked it up.",
	"temporal_nexus_task_execution_failed_total":            "Nexus tasks that failed.",
	"temporal_nexus_task_execution_latency_seconds":         "Time the worker spent on a Nexus task.",
	"temporal_nexus_task_endtoend_latency_seconds":          "Time from a Nexus task's scheduling to its completion.",
}

// undocumented starts the HELP of a metric not in help.
const undocumented = "Temporal SDK metric not documented by this version of the orchestrator: "

// helpOf is the HELP text of an exported family.
func helpOf(name string) string {
	if h, ok := help[name]; ok {
		return h
	}
	return undocumented + name + "."
}

// Buckets, in seconds. Task and request latencies run from a millisecond;
// a switch takes seconds, minutes while a step retries; a release waits as
// long as a pool holds its config, which can be days.
var (
	timerBuckets       = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	switchBuckets      = []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	releaseWaitBuckets = []float64{1, 10, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 4 * 86400, 7 * 86400, 14 * 86400, 30 * 86400}
)

// bucketsOf returns the buckets of a timer family.
func bucketsOf(name string) []float64 {
	switch {
	case name == "ate_release_wait_seconds":
		return releaseWaitBuckets
	case name == "ate_switch_duration_seconds":
		return switchBuckets
	case name == "temporal_workflow_endtoend_latency_seconds":
		// Release workflows are among them.
		return releaseWaitBuckets
	}
	return timerBuckets
}
