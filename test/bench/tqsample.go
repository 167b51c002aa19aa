package main

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
)

// taskQueueStats is the product task queue's workflow task backlog during
// the switch, from DescribeTaskQueue (with stats) once a second, beside the
// worker's own count of its open workflow task polls per queue: how many
// workflow tasks waited for a poller, for how long, how many pollers the
// server saw, and where the worker's polls were waiting meanwhile. A wave
// that stalls with idle CPU shows here (docs/decisions/0006-wave-stall.md:
// a frozen backlog on the shared queue while every poll waits on the
// worker's sticky queue).
type taskQueueStats struct {
	Samples              int     `json:"samples"`
	MaxBacklog           int64   `json:"max_backlog"`
	MaxBacklogAgeSeconds float64 `json:"max_backlog_age_seconds"`
	MinPollers           int     `json:"min_pollers"`
	// NormalPollsZeroSamples counts the samples in which the shared queue
	// had a backlog and the worker had no poll open on it.
	NormalPollsZeroSamples int `json:"samples_backlog_with_no_normal_poll"`
	// Series: every other sample, seconds since the start, backlog, its age,
	// and the worker's open polls on the shared and on its sticky queue
	// (temporal_num_pollers; -1 when the worker's metrics did not answer).
	Series [][5]float64 `json:"series"`
}

// sampleTaskQueue samples the task queue's workflow task backlog and the
// worker's open polls every second until the returned function is called.
func sampleTaskQueue(ctx context.Context, tc tclient.Client, namespace, taskQueue string, wp *process) func() *taskQueueStats {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan *taskQueueStats, 1)
	start := time.Now()
	go func() {
		st := &taskQueueStats{MinPollers: -1}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			resp, err := tc.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
				Namespace:     namespace,
				TaskQueue:     &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
				TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
				ReportStats:   true,
			})
			if err == nil {
				backlog := resp.GetStats().GetApproximateBacklogCount()
				age := resp.GetStats().GetApproximateBacklogAge().AsDuration().Seconds()
				st.MaxBacklog, st.MaxBacklogAgeSeconds = max(st.MaxBacklog, backlog), max(st.MaxBacklogAgeSeconds, round(age, 2))
				if p := len(resp.GetPollers()); st.MinPollers < 0 || p < st.MinPollers {
					st.MinPollers = p
				}
				normal, sticky := workerPolls(ctx, wp)
				if backlog > 0 && normal == 0 {
					st.NormalPollsZeroSamples++
				}
				if st.Samples%2 == 0 {
					st.Series = append(st.Series, [5]float64{round(time.Since(start).Seconds(), 1), float64(backlog), round(age, 1), normal, sticky})
				}
				st.Samples++
			}
			select {
			case <-ctx.Done():
				done <- st
				return
			case <-t.C:
			}
		}
	}()
	return func() *taskQueueStats { cancel(); return <-done }
}

// workerPolls is the worker's open workflow task polls on the shared
// (normal) queue and on its sticky queue, from the SDK's
// temporal_num_pollers gauge; -1, -1 when its metrics do not answer.
func workerPolls(ctx context.Context, wp *process) (normal, sticky float64) {
	m, err := processMetrics(ctx, wp.metricsAddr, "poller_type")
	if err != nil {
		return -1, -1
	}
	return m["temporal_num_pollers|poller_type=workflow_task"], m["temporal_num_pollers|poller_type=workflow_sticky_task"]
}
