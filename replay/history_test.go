package replay

import (
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
)

// quiet is the replayer's logger: warnings and errors only.
var quiet = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

// silent drops everything: for replays that are meant to fail.
var silent = tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))

// The helpers below read what a workflow did from its history: the
// activities it scheduled and the child workflows it started, with their
// inputs and results decoded by the worker's data converter.

// call is one activity, from its ActivityTaskScheduled event to the event
// that closed it (Temporal retries an activity inside one scheduled event,
// so one call is one attempt chain).
type call struct {
	Type      string
	Input     *commonpb.Payloads
	Scheduled int64 // event ID
	Closed    int64 // event ID of the completion, failure, time-out or cancel; 0 while running
	Result    *commonpb.Payloads
}

func activityCalls(h *historypb.History) []*call {
	byID := map[int64]*call{}
	var out []*call
	closeCall := func(scheduled, closed int64, result *commonpb.Payloads) {
		if c := byID[scheduled]; c != nil {
			c.Closed, c.Result = closed, result
		}
	}
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			c := &call{Type: a.GetActivityType().GetName(), Input: a.GetInput(), Scheduled: e.GetEventId()}
			byID[e.GetEventId()] = c
			out = append(out, c)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			closeCall(a.GetScheduledEventId(), e.GetEventId(), a.GetResult())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			closeCall(e.GetActivityTaskFailedEventAttributes().GetScheduledEventId(), e.GetEventId(), nil)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			closeCall(e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId(), e.GetEventId(), nil)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			closeCall(e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), e.GetEventId(), nil)
		}
	}
	return out
}

func callTypes(calls []*call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Type
	}
	return out
}

// child is one child workflow, from its StartChildWorkflowExecutionInitiated
// event to the event that closed it.
type child struct {
	Type, ID  string
	Input     *commonpb.Payloads
	Initiated int64 // event ID
	Started   int64 // event ID of ChildWorkflowExecutionStarted; 0 before
	Closed    int64 // event ID of the child's end (or of a failed start); 0 while running
	Result    *commonpb.Payloads
	CloseType enumspb.EventType
}

func children(h *historypb.History) []*child {
	byID := map[int64]*child{}
	var out []*child
	closeChild := func(initiated int64, e *historypb.HistoryEvent, result *commonpb.Payloads) {
		if c := byID[initiated]; c != nil {
			c.Closed, c.Result, c.CloseType = e.GetEventId(), result, e.GetEventType()
		}
	}
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			c := &child{Type: a.GetWorkflowType().GetName(), ID: a.GetWorkflowId(), Input: a.GetInput(), Initiated: e.GetEventId()}
			byID[e.GetEventId()] = c
			out = append(out, c)
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			if c := byID[e.GetChildWorkflowExecutionStartedEventAttributes().GetInitiatedEventId()]; c != nil {
				c.Started = e.GetEventId()
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
			closeChild(e.GetStartChildWorkflowExecutionFailedEventAttributes().GetInitiatedEventId(), e, nil)
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			a := e.GetChildWorkflowExecutionCompletedEventAttributes()
			closeChild(a.GetInitiatedEventId(), e, a.GetResult())
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
			closeChild(e.GetChildWorkflowExecutionFailedEventAttributes().GetInitiatedEventId(), e, nil)
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
			closeChild(e.GetChildWorkflowExecutionCanceledEventAttributes().GetInitiatedEventId(), e, nil)
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
			closeChild(e.GetChildWorkflowExecutionTimedOutEventAttributes().GetInitiatedEventId(), e, nil)
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
			closeChild(e.GetChildWorkflowExecutionTerminatedEventAttributes().GetInitiatedEventId(), e, nil)
		}
	}
	return out
}

// decode decodes payloads with the data converter the worker and the
// replayer use.
func decode(t testing.TB, p *commonpb.Payloads, into any) {
	t.Helper()
	dc := ReplayerOptions().DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	require.NoError(t, dc.FromPayloads(p, into))
}

// startInput decodes the workflow's input from its first event.
func startInput(t testing.TB, h *historypb.History, into any) {
	t.Helper()
	decode(t, h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), into)
}

func lastEvent(h *historypb.History) *historypb.HistoryEvent {
	return h.GetEvents()[len(h.GetEvents())-1]
}

// isOpen reports whether the history was exported while the workflow ran.
func isOpen(h *historypb.History) bool {
	switch lastEvent(h).GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return false
	}
	return true
}

// result decodes the result of a completed workflow; it fails the test for
// a history that did not complete.
func result(t testing.TB, h *historypb.History, into any) {
	t.Helper()
	last := lastEvent(h)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, last.GetEventType(), "the workflow completed")
	decode(t, last.GetWorkflowExecutionCompletedEventAttributes().GetResult(), into)
}
