package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// A worker identity is "<pid>@<host>@..." (the Temporal SDK's default), so
// the histories say which incarnation of a process did what.
func identityOf(pid int) string { return fmt.Sprintf("%d@", pid) }

// rerun is the evidence in a workflow's history that the work a worker
// was killed in was taken over by another.
type rerun struct {
	Workflow string
	// How: "regular" (an attempt of the activity after the killed one's
	// start-to-close timeout) or "local" (the killed worker's workflow
	// task timed out and another worker completed a later one).
	How      string
	Attempt  int32    // the activity's attempt, or the taking-over workflow task's
	Identity string   // the worker that took over
	Result   string   // a regular activity's result, as JSON
	Steps    []string // the local steps the taking-over task recorded
}

// rerunsAfterKill reads the histories of the task queue's workflows for
// the work the worker of pid was killed in, taken over by another worker:
//   - a regular activity: a started attempt of activity after the first
//     whose last failure is a timeout (the killed attempt's start-to-close:
//     nothing else tells the server it is gone), by another worker, and the
//     result it completed with;
//   - a local activity (a switch's step): a workflow task started by pid
//     that timed out, then a task another worker completed, with its
//     attempt and the steps it recorded. The killed step need not be among
//     them: a re-run Claim tells from the class's lastSwitch stamp which of
//     its run's writes landed, and the switch goes on from there. A task
//     that times out again is not written to the history (a transient
//     task): a second worker killed in it shows only in the attempt of the
//     task that finally completed.
func rerunsAfterKill(t testing.TB, taskQueue, activity string, pid int) []rerun {
	t.Helper()
	tc := testenv.Current().Temporal
	execs, err := Executions(context.Background(), tc, fmt.Sprintf("TaskQueue = %q", taskQueue))
	require.NoError(t, err)
	crashed := identityOf(pid)
	var out []rerun
	for _, e := range execs {
		it := tc.GetWorkflowHistory(context.Background(), e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var events []*historypb.HistoryEvent
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err, "reading the history of %s", e.Execution.WorkflowId)
			events = append(events, ev)
		}
		types := map[int64]string{}         // scheduled event ID: activity type
		retried := map[int64]*rerun{}       // scheduled event ID: the retry started
		taskStartedBy := map[int64]string{} // workflow task started event ID: identity
		taskAttempt := map[int64]int32{}    // workflow task scheduled, then started, event ID: attempt
		lost := false                       // a task the crashed worker started timed out
		var takeover *rerun                 // the task completed after it, collecting its steps
		for _, ev := range events {
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				types[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := ev.GetActivityTaskStartedEventAttributes()
				if types[a.GetScheduledEventId()] == activity && a.GetAttempt() > 1 &&
					a.GetLastFailure().GetTimeoutFailureInfo() != nil && !strings.HasPrefix(a.GetIdentity(), crashed) {
					retried[a.GetScheduledEventId()] = &rerun{Workflow: e.Execution.WorkflowId, How: "regular", Attempt: a.GetAttempt(), Identity: a.GetIdentity()}
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := ev.GetActivityTaskCompletedEventAttributes()
				if r := retried[a.GetScheduledEventId()]; r != nil {
					if p := a.GetResult().GetPayloads(); len(p) > 0 {
						r.Result = string(p[0].GetData())
					}
					out = append(out, *r)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				taskAttempt[ev.GetEventId()] = ev.GetWorkflowTaskScheduledEventAttributes().GetAttempt()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				a := ev.GetWorkflowTaskStartedEventAttributes()
				taskStartedBy[ev.GetEventId()] = a.GetIdentity()
				taskAttempt[ev.GetEventId()] = taskAttempt[a.GetScheduledEventId()]
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				by := taskStartedBy[ev.GetWorkflowTaskTimedOutEventAttributes().GetStartedEventId()]
				lost = lost || strings.HasPrefix(by, crashed)
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if takeover != nil {
					out = append(out, *takeover)
					takeover = nil
				}
				a := ev.GetWorkflowTaskCompletedEventAttributes()
				if by := a.GetIdentity(); lost && !strings.HasPrefix(by, crashed) {
					takeover = &rerun{Workflow: e.Execution.WorkflowId, How: "local", Identity: by, Attempt: taskAttempt[a.GetStartedEventId()]}
					lost = false
				}
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				m := ev.GetMarkerRecordedEventAttributes()
				var data struct {
					ActivityType string
					Attempt      int32
				}
				if p := m.GetDetails()["data"].GetPayloads(); takeover != nil && m.GetMarkerName() == "LocalActivity" &&
					len(p) > 0 && json.Unmarshal(p[0].GetData(), &data) == nil {
					takeover.Steps = append(takeover.Steps, data.ActivityType)
				}
			}
		}
		if takeover != nil {
			out = append(out, *takeover)
		}
	}
	return out
}

// switchStart is a switch run a client started: who, and the move asked.
type switchStart struct {
	Run      string // workflow ID/run ID
	Identity string
	From, To string
}

// switchStarts returns the switch runs of the task queue (a visibility
// query narrows it further when not empty) that a client started, rather
// than their workflow continuing as new, with the identity that started
// each and the move of its input.
func switchStarts(t testing.TB, taskQueue, and string) []switchStart {
	t.Helper()
	tc := testenv.Current().Temporal
	query := fmt.Sprintf("TaskQueue = %q AND WorkflowType = %q", taskQueue, wfapi.SwitchWorkflow)
	if and != "" {
		query += " AND " + and
	}
	execs, err := Executions(context.Background(), tc, query)
	require.NoError(t, err)
	var out []switchStart
	for _, e := range execs {
		it := tc.GetWorkflowHistory(context.Background(), e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		require.True(t, it.HasNext(), "the history of %s", e.Execution.WorkflowId)
		ev, err := it.Next()
		require.NoError(t, err, "reading the history of %s", e.Execution.WorkflowId)
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		if a.GetContinuedExecutionRunId() != "" {
			continue
		}
		s := switchStart{Run: e.Execution.WorkflowId + "/" + e.Execution.RunId, Identity: a.GetIdentity()}
		var in wfapi.SwitchInput
		if p := a.GetInput().GetPayloads(); len(p) > 0 && json.Unmarshal(p[0].GetData(), &in) == nil {
			s.From, s.To = in.From, in.To
		}
		out = append(out, s)
	}
	return out
}

// startedBy counts the starts by the process of each of pids (by the
// identity's prefix); the others under 0.
func startedBy(starts []switchStart, pids ...int) map[int]int {
	out := map[int]int{}
	for _, s := range starts {
		who := 0
		for _, pid := range pids {
			if strings.HasPrefix(s.Identity, identityOf(pid)) {
				who = pid
			}
		}
		out[who]++
	}
	return out
}
