package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// shapeStats counts what switches cost in Temporal, from sampled pools:
// every execution a switch started (found by the pool's WorkerPool search
// attribute and its start time), whole, plus what a long-running pool
// workflow (the pool+child shapes') gained during the switch.
type shapeStats struct {
	Samples int `json:"samples"`
	// StateTransitions: the StateTransitionCount (DescribeWorkflowExecution)
	// of every execution the switch started, plus the long-running
	// workflow's gain over the switch window.
	StateTransitions float64 `json:"state_transitions_per_switch"`
	// LongRunningTransitions: the long-running workflow's share of it.
	LongRunningTransitions float64 `json:"long_running_transitions_per_switch"`
	// Executions: executions the switch started (1 in the product's shape: the
	// switch itself; 1 in the pool+child shapes: the child).
	Executions float64 `json:"executions_per_switch"`
	// EventsPerSwitch: every event of the executions the switch started,
	// plus the events the long-running workflow gained in the window.
	EventsPerSwitch float64 `json:"events_per_switch"`
	// PassesPerSwitch: the long-running workflow's passes (Observe
	// markers) in the window.
	PassesPerSwitch float64 `json:"passes_per_switch"`
	// Child: the events of the executions the switch started.
	Child float64 `json:"child_events"`
	// SwitchPass: the long-running workflow's events of one pass that ran
	// a switch, and PlainPass those of a pass that switched nothing (from
	// passes that had a wake-up of their own).
	SwitchPass   float64 `json:"switch_pass_events"`
	SwitchPasses int     `json:"switch_passes_sampled"`
	PlainPass    float64 `json:"plain_pass_events"`
	PlainPasses  int     `json:"plain_passes_sampled"`
	// Activities, local activities and workflow tasks per switch (window).
	Activities      float64 `json:"activities"`
	LocalActivities float64 `json:"local_activities"`
	WorkflowTasks   float64 `json:"workflow_tasks"`
	// Retries: activity attempts beyond the first, per switch;
	// TaskTimeouts: workflow tasks that timed out or failed.
	Retries      float64 `json:"retries"`
	TaskTimeouts float64 `json:"workflow_task_timeouts"`
	// Signals: signals the pool's executions received in the window.
	Signals float64 `json:"signals"`
	// ReleaseEvents, ReleasePasses: per pool, in the release window: the
	// events of executions of the pool started in it and those the
	// long-running workflow gained, and its passes.
	ReleaseEvents float64 `json:"release_events_per_pool,omitempty"`
	ReleasePasses float64 `json:"release_passes_per_pool,omitempty"`
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
	events, activities, locals, tasks, retries, signals int
	childStarts, taskTimeouts                           int
}

func (c *counted) add(o counted) {
	c.events += o.events
	c.activities += o.activities
	c.locals += o.locals
	c.tasks += o.tasks
	c.retries += o.retries
	c.signals += o.signals
	c.childStarts += o.childStarts
	c.taskTimeouts += o.taskTimeouts
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
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			c.childStarts++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			c.signals++
		}
	}
	return c
}

// window returns the events written in [from, to).
func window(evs []*historypb.HistoryEvent, from, to time.Time) []*historypb.HistoryEvent {
	var out []*historypb.HistoryEvent
	for _, ev := range evs {
		t := ev.GetEventTime().AsTime()
		if !t.Before(from) && t.Before(to) {
			out = append(out, ev)
		}
	}
	return out
}

// segments splits a long-running workflow's history into wake-ups: a new
// segment begins with a signal that found the workflow idle, with no
// workflow task, activity, child or timer pending. A segment is one pass,
// or more when a signal arrived during a pass (the Observe markers count
// the passes).
func segments(evs []*historypb.HistoryEvent) [][]*historypb.HistoryEvent {
	var out [][]*historypb.HistoryEvent
	start, pending, task := 0, 0, false
	for i, ev := range evs {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if pending == 0 && !task && i > start {
				out = append(out, evs[start:i])
				start = i
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			task = true
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			task = false
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, enumspb.EVENT_TYPE_TIMER_STARTED:
			pending++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
			enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
			enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_TIMER_FIRED, enumspb.EVENT_TYPE_TIMER_CANCELED:
			pending--
		}
	}
	return append(out, evs[start:])
}

// switchWindow is what measureShape averages over: the switch window
// [From, To), the release window [To, End) (End zero: none), and the
// long-running workflows' state transitions at From and at To.
type switchWindow struct {
	From, To, End     time.Time
	LRBefore, LRAfter map[string]int64
}

// measureShape reads, for each sampled pool, every execution started in
// the switch window (waiting for each to be at rest) and the long-running
// workflow's history, and averages per pool what the switch cost.
func measureShape(ctx context.Context, tc tclient.Client, samples []poolSample, win switchWindow) (*shapeStats, error) {
	st := &shapeStats{}
	var switchPass, plainPass float64
	for _, s := range samples {
		execs, err := awaitPoolExecutions(ctx, tc, s, win.From, win.To)
		if err != nil {
			return nil, err
		}
		st.Samples++
		var started counted
		for _, e := range execs {
			n, _, err := settledTransitions(ctx, tc, e.ID, e.RunID)
			if err != nil {
				return nil, err
			}
			st.StateTransitions += float64(n)
			evs, err := history(ctx, tc, e.ID, e.RunID)
			if err != nil {
				return nil, err
			}
			started.add(count(evs))
		}
		st.Executions += float64(len(execs))
		st.Child += float64(started.events)
		total := started
		before, long := win.LRBefore[s.LongRunning]
		var lr []*historypb.HistoryEvent
		if long {
			if lr, err = history(ctx, tc, s.LongRunning, ""); err != nil {
				return nil, err
			}
			w := count(window(lr, win.From, win.To))
			total.add(w)
			st.PassesPerSwitch += float64(w.locals)
			gained := float64(win.LRAfter[s.LongRunning] - before)
			st.StateTransitions += gained
			st.LongRunningTransitions += gained
		}
		st.EventsPerSwitch += float64(total.events)
		st.Activities += float64(total.activities)
		st.LocalActivities += float64(total.locals)
		st.WorkflowTasks += float64(total.tasks)
		st.Retries += float64(total.retries)
		st.TaskTimeouts += float64(total.taskTimeouts)
		st.Signals += float64(total.signals)
		if !win.End.IsZero() {
			rel, err := poolExecutions(ctx, tc, s, win.To, win.End)
			if err != nil {
				return nil, err
			}
			for _, e := range rel {
				evs, err := history(ctx, tc, e.ID, e.RunID)
				if err != nil {
					return nil, err
				}
				st.ReleaseEvents += float64(len(evs))
			}
			if long {
				r := count(window(lr, win.To, win.End))
				st.ReleaseEvents += float64(r.events)
				st.ReleasePasses += float64(r.locals)
			}
		}
		for i, seg := range segments(lr) {
			c := count(seg)
			switch {
			case i == 0 || c.locals != 1:
				// the start, or a wake-up that ran several passes
			case c.childStarts > 0:
				switchPass += float64(c.events)
				st.SwitchPasses++
			default:
				plainPass += float64(c.events)
				st.PlainPasses++
			}
		}
	}
	if st.Samples == 0 {
		return st, fmt.Errorf("no executions sampled")
	}
	n := float64(st.Samples)
	for _, v := range []*float64{&st.StateTransitions, &st.LongRunningTransitions, &st.Executions, &st.EventsPerSwitch,
		&st.PassesPerSwitch, &st.Child, &st.Activities, &st.LocalActivities, &st.WorkflowTasks, &st.Retries, &st.TaskTimeouts, &st.Signals,
		&st.ReleaseEvents, &st.ReleasePasses} {
		*v = round(*v/n, 2)
	}
	if st.SwitchPasses > 0 {
		st.SwitchPass = round(switchPass/float64(st.SwitchPasses), 1)
	}
	if st.PlainPasses > 0 {
		st.PlainPass = round(plainPass/float64(st.PlainPasses), 1)
	}
	return st, nil
}
