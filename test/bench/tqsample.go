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
// the switch, from DescribeTaskQueue (with stats) once a second: how many
// workflow tasks waited for a poller, for how long, and how many pollers
// the server saw. A wave that stalls with idle CPU shows here.
type taskQueueStats struct {
	Samples              int     `json:"samples"`
	MaxBacklog           int64   `json:"max_backlog"`
	MaxBacklogAgeSeconds float64 `json:"max_backlog_age_seconds"`
	MinPollers           int     `json:"min_pollers"`
	// Series: every other sample, seconds since the start, backlog and its
	// age.
	Series [][3]float64 `json:"series"`
}

// sampleTaskQueue samples the task queue's workflow task backlog every
// second until the returned function is called.
func sampleTaskQueue(ctx context.Context, tc tclient.Client, namespace, taskQueue string) func() *taskQueueStats {
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
				if st.Samples%2 == 0 {
					st.Series = append(st.Series, [3]float64{round(time.Since(start).Seconds(), 1), float64(backlog), round(age, 1)})
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
