package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	tclient "go.temporal.io/sdk/client"
)

// shapeStats counts what switches cost in Temporal, from sampled histories.
type shapeStats struct {
	Samples int `json:"samples"`
	// EventsPerSwitch: every event a pool's workflows gained in the switch
	// window (the parent's, with any extra pass the switch caused, plus the
	// switch workflow's).
	EventsPerSwitch float64 `json:"events_per_switch"`
	// PassesPerSwitch: the parent's passes (Observe markers) in the window.
	PassesPerSwitch float64 `json:"passes_per_switch"`
	// Child: the switch workflow's events.
	Child float64 `json:"child_events"`
	// SwitchPass: the parent's events of one pass that ran a switch, and
	// PlainPass those of a pass that switched nothing (from passes that had
	// a wake-up of their own).
	SwitchPass   float64 `json:"switch_pass_events"`
	SwitchPasses int     `json:"switch_passes_sampled"`
	PlainPass    float64 `json:"plain_pass_events"`
	PlainPasses  int     `json:"plain_passes_sampled"`
	// Activities, local activities and workflow tasks per switch (window).
	Activities      float64 `json:"activities"`
	LocalActivities float64 `json:"local_activities"`
	WorkflowTasks   float64 `json:"workflow_tasks"`
	// Retries: activity attempts beyond the first, per switch.
	Retries float64 `json:"retries"`
	// Signals: signals a pool workflow received in the window.
	Signals float64 `json:"signals"`
	// ReleaseEvents, ReleasePasses: per pool, in the release window (the
	// passes the old default's deletion causes).
	ReleaseEvents float64 `json:"release_events_per_pool,omitempty"`
	ReleasePasses float64 `json:"release_passes_per_pool,omitempty"`
}

func history(ctx context.Context, tc tclient.Client, id string) ([]*historypb.HistoryEvent, error) {
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

type counted struct {
	events, activities, locals, tasks, retries, signals int
	childStarts                                         int
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

// measureShape reads the histories of sampled pool workflows (parents) and
// of their switch workflow, and averages what the switch window
// [from, to) and the release window [to, end) added per pool.
func measureShape(ctx context.Context, tc tclient.Client, parents []string, switchID func(parent string) string, from, to, end time.Time) (*shapeStats, error) {
	st := &shapeStats{}
	var switchPass, plainPass float64
	for _, parent := range parents {
		evs, err := history(ctx, tc, parent)
		if err != nil {
			return nil, err
		}
		child, err := history(ctx, tc, switchID(parent))
		if err != nil {
			return nil, err
		}
		st.Samples++
		w, cc := count(window(evs, from, to)), count(child)
		st.EventsPerSwitch += float64(w.events + cc.events)
		st.PassesPerSwitch += float64(w.locals)
		st.Child += float64(cc.events)
		st.Activities += float64(w.activities + cc.activities)
		st.LocalActivities += float64(w.locals + cc.locals)
		st.WorkflowTasks += float64(w.tasks + cc.tasks)
		st.Retries += float64(w.retries + cc.retries)
		st.Signals += float64(w.signals)
		if !end.IsZero() {
			r := count(window(evs, to, end))
			st.ReleaseEvents += float64(r.events)
			st.ReleasePasses += float64(r.locals)
		}
		for i, seg := range segments(evs) {
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
		return st, fmt.Errorf("no histories sampled")
	}
	n := float64(st.Samples)
	for _, v := range []*float64{&st.EventsPerSwitch, &st.PassesPerSwitch, &st.Child, &st.Activities, &st.LocalActivities,
		&st.WorkflowTasks, &st.Retries, &st.Signals, &st.ReleaseEvents, &st.ReleasePasses} {
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
