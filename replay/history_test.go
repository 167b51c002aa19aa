package replay

import (
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/workflows"
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
//
// A local activity has no events of its own: the worker runs it inside a
// workflow task and records it, once it ended, as a MarkerRecorded event
// named "LocalActivity", whose details carry its type and result but not its
// input. Such a call starts and closes at its marker; one retried from a
// timer (a backoff longer than the workflow task's timeout) leaves a failed
// marker per wait and spans from the first to the last.
type call struct {
	Type      string
	Local     bool
	Input     *commonpb.Payloads // nil for a local activity
	Scheduled int64              // event ID (a local activity's first marker)
	Closed    int64              // event ID of the completion, failure, time-out or cancel; 0 while running
	Result    *commonpb.Payloads
	// Task is the event ID of the WorkflowTaskCompleted event of the
	// workflow task that asked for the call: the last one before its
	// scheduled event or first marker (a task's commands, markers
	// included, are recorded after its completion); 0 for none.
	Task int64
}

// localActivityMarker is the part of a LocalActivity marker's "data" detail
// the checks read (the SDK's localActivityMarkerData).
type localActivityMarker struct {
	ActivityType string
	Attempt      int32
	Backoff      time.Duration
}

const localActivityMarkerName = "LocalActivity"

func activityCalls(t testing.TB, h *historypb.History) []*call {
	t.Helper()
	byID := map[int64]*call{}
	var out []*call
	var retrying *call // a local activity waiting on its backoff timer
	var task int64     // the last WorkflowTaskCompleted event
	closeCall := func(scheduled, closed int64, result *commonpb.Payloads) {
		if c := byID[scheduled]; c != nil {
			c.Closed, c.Result = closed, result
		}
	}
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			task = e.GetEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			c := &call{Type: a.GetActivityType().GetName(), Input: a.GetInput(), Scheduled: e.GetEventId(), Task: task}
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
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			if a.GetMarkerName() != localActivityMarkerName {
				continue
			}
			var m localActivityMarker
			decode(t, a.GetDetails()["data"], &m)
			require.NotEmpty(t, m.ActivityType, "local activity marker %d names no activity type", e.GetEventId())
			c := retrying
			if c == nil || c.Type != m.ActivityType {
				c = &call{Type: m.ActivityType, Local: true, Scheduled: e.GetEventId(), Task: task}
				out = append(out, c)
			}
			retrying = nil
			if a.GetFailure() != nil && m.Backoff > 0 {
				retrying = c // the SDK retries it once a timer fires
				continue
			}
			c.Closed = e.GetEventId()
			if a.GetFailure() == nil {
				c.Result = a.GetDetails()["result"]
			}
		}
	}
	return out
}

// workflowTasksCompleted lists the event IDs of the history's
// WorkflowTaskCompleted events.
func workflowTasksCompleted(h *historypb.History) []int64 {
	var out []int64
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			out = append(out, e.GetEventId())
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

// TestActivityCallsReadLocalActivityMarkers: a local activity is a call of
// its own, from its marker, with its result and no input; one retried from
// a timer is one call from its first marker to its last; other markers are
// no calls.
func TestActivityCallsReadLocalActivityMarkers(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	payloads := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		require.NoError(t, err)
		return p
	}
	marker := func(id int64, name string, details map[string]*commonpb.Payloads, failed bool) *historypb.HistoryEvent {
		a := &historypb.MarkerRecordedEventAttributes{MarkerName: name, Details: details}
		if failed {
			a.Failure = &failurepb.Failure{Message: "the API server is unavailable"}
		}
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
			Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: a}}
	}
	local := func(id int64, activityType string, backoff time.Duration, result *commonpb.Payloads) *historypb.HistoryEvent {
		details := map[string]*commonpb.Payloads{"data": payloads(localActivityMarker{ActivityType: activityType, Attempt: 1, Backoff: backoff})}
		if result != nil {
			details["result"] = result
		}
		return marker(id, "LocalActivity", details, result == nil)
	}
	h := &historypb.History{Events: []*historypb.HistoryEvent{
		{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED},
		marker(2, "Version", map[string]*commonpb.Payloads{"change-id": payloads("a-change"), "version": payloads(1)}, false),
		local(3, "Protect", 0, payloads(activities.TargetCheck{OK: true})),
		{EventId: 4, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: "Claim"}, Input: payloads("claim input")}}},
		{EventId: 5, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 4}}},
		local(6, "ReadConfig", 12*time.Second, nil),
		{EventId: 7, EventType: enumspb.EVENT_TYPE_TIMER_STARTED},
		{EventId: 8, EventType: enumspb.EVENT_TYPE_TIMER_FIRED},
		local(9, "ReadConfig", 0, payloads("live")),
	}}

	calls := activityCalls(t, h)
	require.Equal(t, []string{"Protect", "Claim", "ReadConfig"}, callTypes(calls))
	for i, want := range []call{
		{Type: "Protect", Local: true, Scheduled: 3, Closed: 3},
		{Type: "Claim", Scheduled: 4, Closed: 5},
		{Type: "ReadConfig", Local: true, Scheduled: 6, Closed: 9},
	} {
		got := calls[i]
		require.Equal(t, want.Local, got.Local, got.Type)
		require.Equal(t, want.Scheduled, got.Scheduled, got.Type)
		require.Equal(t, want.Closed, got.Closed, got.Type)
		require.Equal(t, want.Local, got.Input == nil, "%s: only a regular activity's input is recorded", got.Type)
	}
	var live string
	decode(t, calls[2].Result, &live)
	require.Equal(t, "live", live, "the result of the attempt that succeeded")
	checkOneAtATime(t, h)
}

// A local activity's input is not in the history. To check what a switch
// gave its local steps, the checks replay the history (with
// the production workflows, under the execution it was recorded from) and
// record the input the workflow code passes each activity it asks for. The
// replay feeds the code the recorded results, and TestReplay proves the
// code issues the recorded commands, so these are the inputs the recorded
// run computed, as far as the current code computes them the same way.

// step is one activity a workflow asked for during a replay.
type step struct {
	Type  string
	Local bool
	Input any // the first argument, as the workflow code passed it
}

// stepRecorder is a worker interceptor that records the steps of the
// workflows it sees.
type stepRecorder struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	steps []step
}

func (r *stepRecorder) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &stepInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, rec: r}
}

func (r *stepRecorder) add(s step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
}

type stepInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *stepRecorder
}

func (i *stepInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&stepOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, rec: i.rec})
}

type stepOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *stepRecorder
}

func firstArg(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

func (o *stepOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add(step{Type: activityType, Input: firstArg(args)})
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *stepOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.rec.add(step{Type: activityType, Local: true, Input: firstArg(args)})
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

// replaySteps replays a history under its execution and returns the steps
// the workflow asked for, in order, with their inputs.
func replaySteps(t testing.TB, exec Execution, h *historypb.History) []step {
	t.Helper()
	rec := &stepRecorder{}
	r, err := newReplayer(workflows.RegisterWorkflows, rec)
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistoryWithOptions(quiet, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: exec.WorkflowExecution()}),
		"replaying the history as %s to read the inputs of its steps", exec.WorkflowID)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.steps)
}

// upsertedOutcome is the last value of the Outcome search attribute the
// workflow upserted, and whether it upserted one.
func upsertedOutcome(t testing.TB, h *historypb.History) (string, bool) {
	t.Helper()
	outcome, ok := "", false
	for _, e := range h.GetEvents() {
		p := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[searchattr.Outcome]
		if p == nil {
			continue
		}
		decode(t, &commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, &outcome)
		ok = true
	}
	return outcome, ok
}

// signals lists the names of the signals the workflow received, in order.
func signals(h *historypb.History) []string {
	var out []string
	for _, e := range h.GetEvents() {
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			out = append(out, a.GetSignalName())
		}
	}
	return out
}
