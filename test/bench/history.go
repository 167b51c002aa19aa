package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// shapeStats counts what switches cost in Temporal, per sampled pool:
// every execution a switch started (found by the pool's WorkerPool search
// attribute and its start time), whole.
type shapeStats struct {
	Samples int `json:"samples"`
	// StateTransitions: the StateTransitionCount (DescribeWorkflowExecution)
	// of every execution the switch started.
	StateTransitions float64 `json:"state_transitions_per_switch"`
	// Executions: executions the switch started (1: the switch itself).
	Executions float64 `json:"executions_per_switch"`
	// EventsPerSwitch and Child: every event of the executions the switch
	// started.
	EventsPerSwitch float64 `json:"events_per_switch"`
	Child           float64 `json:"child_events"`
	// Activities, local activities and workflow tasks per switch.
	Activities      float64 `json:"activities"`
	LocalActivities float64 `json:"local_activities"`
	WorkflowTasks   float64 `json:"workflow_tasks"`
	// Retries: activity attempts beyond the first, per switch;
	// TaskTimeouts: workflow tasks that timed out or failed.
	Retries      float64 `json:"retries"`
	TaskTimeouts float64 `json:"workflow_task_timeouts"`
	// Signals: signals the pool's executions received.
	Signals float64 `json:"signals"`
	// ReleaseEvents: per pool, the events of its executions started in the
	// release window.
	ReleaseEvents float64 `json:"release_events_per_pool,omitempty"`
}

func history(ctx context.Context, tc tclient.Client, id, runID string) ([]*historypb.HistoryEvent, error) {
	it := tc.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s (run %s): %w", id, runID, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// signalsOfAllRuns counts the WorkflowExecutionSignaled events in the
// histories of every run of the workflow id (continued-as-new or started
// again), once there is at least one and none is running.
func signalsOfAllRuns(ctx context.Context, s *stack, id string) (signals, runs int, err error) {
	query := fmt.Sprintf("WorkflowId = %q", id)
	var execs []execRef
	if err := untilEvery(ctx, 100*time.Millisecond, time.Minute, "a run of "+id, func() (bool, string) {
		execs, err = listExecutions(ctx, s.tc, query)
		return err == nil && len(execs) > 0, fmt.Sprintf("%d runs (%v)", len(execs), err)
	}); err != nil {
		return 0, 0, err
	}
	if err := awaitNoneRunning(ctx, s, query, "the runs of "+id+" to close"); err != nil {
		return 0, 0, err
	}
	if execs, err = listExecutions(ctx, s.tc, query); err != nil {
		return 0, 0, err
	}
	for _, e := range execs {
		evs, err := history(ctx, s.tc, e.ID, e.RunID)
		if err != nil {
			return 0, 0, err
		}
		signals += count(evs).signals
	}
	return signals, len(execs), nil
}

type counted struct {
	events, activities, locals, tasks, retries, signals, taskTimeouts int
}

func count(evs []*historypb.HistoryEvent) counted {
	var c counted
	for _, ev := range evs {
		c.events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			c.activities++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if a := ev.GetActivityTaskStartedEventAttributes().GetAttempt(); a > 1 {
				c.retries += int(a - 1)
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				c.locals++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			c.tasks++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			c.taskTimeouts++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			c.signals++
		}
	}
	return c
}

// measureShape reads, for each sampled pool (its WorkerPool search
// attribute value), every execution started in the switch window [from,
// to), each at rest, and averages per pool what the switch cost; with a
// non-zero end, also the events of those started in the release window
// [to, end).
func measureShape(ctx context.Context, tc tclient.Client, samples []string, from, to, end time.Time) (*shapeStats, error) {
	st := &shapeStats{}
	for _, pool := range samples {
		execs, err := awaitPoolExecutions(ctx, tc, pool, from, to)
		if err != nil {
			return nil, err
		}
		st.Samples++
		var evs []*historypb.HistoryEvent
		for _, e := range execs {
			n, err := settledTransitions(ctx, tc, e.ID, e.RunID)
			if err != nil {
				return nil, err
			}
			st.StateTransitions += float64(n)
			h, err := history(ctx, tc, e.ID, e.RunID)
			if err != nil {
				return nil, err
			}
			evs = append(evs, h...)
		}
		c := count(evs)
		st.Executions += float64(len(execs))
		st.Child += float64(c.events)
		st.EventsPerSwitch += float64(c.events)
		st.Activities += float64(c.activities)
		st.LocalActivities += float64(c.locals)
		st.WorkflowTasks += float64(c.tasks)
		st.Retries += float64(c.retries)
		st.TaskTimeouts += float64(c.taskTimeouts)
		st.Signals += float64(c.signals)
		if end.IsZero() {
			continue
		}
		rel, err := poolExecutions(ctx, tc, pool, to, end)
		if err != nil {
			return nil, err
		}
		for _, e := range rel {
			h, err := history(ctx, tc, e.ID, e.RunID)
			if err != nil {
				return nil, err
			}
			st.ReleaseEvents += float64(len(h))
		}
	}
	if st.Samples == 0 {
		return st, fmt.Errorf("no executions sampled")
	}
	n := float64(st.Samples)
	for _, v := range []*float64{&st.StateTransitions, &st.Executions, &st.EventsPerSwitch, &st.Child, &st.Activities,
		&st.LocalActivities, &st.WorkflowTasks, &st.Retries, &st.TaskTimeouts, &st.Signals, &st.ReleaseEvents} {
		*v = round(*v/n, 2)
	}
	return st, nil
}
