package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestHandlerExportsCountersGaugesAndTimers(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewHandler(reg)
	require.NoError(t, err)

	switches := h.WithTags(map[string]string{"outcome": "confirmed"})
	switches.Counter("ate_switches").Inc(2)
	h.WithTags(map[string]string{"outcome": "rolled back", "class": "gvisor"}).Counter("ate_switches").Inc(1)
	h.Gauge("temporal.worker.slots").Update(7)
	switches.Timer("ate_switch_duration").Record(300 * time.Millisecond)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ate_switches_total Switch workflows ended, by outcome (confirmed, rolled back, superseded, pool gone, up to date) and sandbox_class.
# TYPE ate_switches_total counter
ate_switches_total{class="",outcome="confirmed"} 2
ate_switches_total{class="gvisor",outcome="rolled back"} 1
# HELP temporal_worker_slots Temporal SDK metric not documented by this version of the orchestrator: temporal_worker_slots.
# TYPE temporal_worker_slots gauge
temporal_worker_slots 7
`), "ate_switches_total", "temporal_worker_slots"))

	count, err := testutil.GatherAndCount(reg, "ate_switch_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, count)
}

// The SDK's namespace tag (the Temporal namespace) is exported as
// temporal_namespace, beside the namespace label Kubernetes service
// discovery adds on scrape; the process label scopes every series.
func TestHandlerRenamesTheTemporalNamespace(t *testing.T) {
	reg := prometheus.NewRegistry()
	worker, err := ForProcess(reg, "worker")
	require.NoError(t, err)
	worker.WithTags(map[string]string{"namespace": "ate", "task_queue": "ate-orchestrator-c1"}).Counter("temporal_workflow_task_queue_poll_empty").Inc(3)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP temporal_workflow_task_queue_poll_empty_total Workflow task polls that returned no task (long poll timed out).
# TYPE temporal_workflow_task_queue_poll_empty_total counter
temporal_workflow_task_queue_poll_empty_total{ate_process="worker",task_queue="ate-orchestrator-c1",temporal_namespace="ate"} 3
`), "temporal_workflow_task_queue_poll_empty_total"))
}
