package replay

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
)

// TestOrderingCatchesWrongSwitches proves the ordering checks can
// fail: a recorded switch, its events rearranged into what a wrongly
// shaped switch would have recorded, fails checkFixture with the rule it
// breaks; the fixture as recorded passes the same harness.
func TestOrderingCatchesWrongSwitches(t *testing.T) {
	runGuardCases(t, "switch", []guardCase{
		{"as recorded", "switch-confirmed", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, an operator's start", "switch-reresolve-moved", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, a claim that refused its target", "switch-claim-refused", func(testing.TB, *historypb.History) {}, ""},
		{"a switch that confirms (reads its target) before it claims", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			moveBefore(t, h, localMarker(t, h, "Confirm"), []*historypb.HistoryEvent{localMarker(t, h, "Claim")})
		}, "Confirm after a Claim that stands"},
		{"a switch whose claim is a regular activity", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			makeRegular(t, h, "Claim")
		}, "every step of the move is local"},
		{"a switch that confirms without claiming", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			remove(h, []*historypb.HistoryEvent{localMarker(t, h, "Claim")})
		}, "Confirm after a Claim that stands"},
		{"a switch that records its event before the write", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			moveBefore(t, h, localMarker(t, h, "RecordEvent"), []*historypb.HistoryEvent{localMarker(t, h, "Confirm")})
		}, "RecordEvent after the write"},
		{"a switch that records its event after a claim that found no earlier write", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			remove(h, []*historypb.HistoryEvent{localMarker(t, h, "Confirm")})
		}, "RecordEvent after the write"},
		{"a switch that protects after it claims", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			moveBefore(t, h, localMarker(t, h, "Protect"), []*historypb.HistoryEvent{localMarker(t, h, "Confirm")})
		}, "Protect before Claim"},
		{"a switch whose move takes two workflow tasks", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			splitTask(t, h, localMarker(t, h, "Confirm"))
		}, "the move in one workflow task"},
		{"a re-resolution whose move takes two workflow tasks", "switch-reresolve-moved", func(t testing.TB, h *historypb.History) {
			splitTask(t, h, localMarker(t, h, "Confirm"))
		}, "the move in one workflow task"},
		{"a re-resolution that observes in a local activity", "switch-reresolve-moved", func(t testing.TB, h *historypb.History) {
			makeLocal(t, h, "Observe")
		}, "records its Observe with a regular activity"},
	})
}

// guardCase is a recorded fixture rearranged into what a wrongly ordered
// workflow would have recorded, and the rule the rearrangement breaks.
type guardCase struct {
	name, fixture string
	change        func(t testing.TB, h *historypb.History)
	want          string // in the failure; "" for none
}

// runGuardCases applies each case's change to its fixture of shape and
// requires checkFixture to fail with the case's rule (or pass, for none).
func runGuardCases(t *testing.T, shape string, cases []guardCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := fixtureAt(t, tc.fixture, shapeVersions[shape])
			h, err := ReadHistory(fx.Path)
			require.NoError(t, err)
			exec, err := fx.Execution()
			require.NoError(t, err)
			tc.change(t, h)
			renumber(h)
			got := failure(t, func(tb testing.TB) { checkFixture(tb, fx, exec, h) })
			if tc.want == "" {
				require.Empty(t, got, "the recorded %s passes the checks", shape)
				return
			}
			require.Contains(t, got, tc.want, "the rule the change breaks")
			t.Logf("%s: %.300s", tc.name, got)
		})
	}
}

// failure runs check with a testing.TB that records a failure instead of
// failing the test, and returns what check reported ("" for nothing).
func failure(t *testing.T, check func(testing.TB)) string {
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(rec)
	}()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return strings.Join(rec.failures, "\n")
}

// recordingTB is a testing.TB whose failures are recorded; FailNow ends the
// goroutine of the check, as the real one does.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Error(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...); r.FailNow() }
func (r *recordingTB) Fatal(args ...any)                 { r.Error(args...); r.FailNow() }
func (r *recordingTB) Fail()                             { r.Errorf("failed") }
func (r *recordingTB) FailNow()                          { r.Fail(); runtime.Goexit() }

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// The history edits below rearrange a recorded history's events into what
// a wrongly shaped switch would have recorded; renumber then gives the
// events consecutive IDs again and fixes the activity events' references.

// regularEvents are the events of the first regular activity of a type:
// scheduled, started and its close.
func regularEvents(t testing.TB, h *historypb.History, activityType string) []*historypb.HistoryEvent {
	t.Helper()
	var scheduled int64
	var out []*historypb.HistoryEvent
	for _, e := range h.GetEvents() {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && scheduled == 0 && a.GetActivityType().GetName() == activityType {
			scheduled = e.GetEventId()
			out = append(out, e)
			continue
		}
		if scheduled != 0 && scheduledBy(e) == scheduled {
			out = append(out, e)
		}
	}
	require.NotEmpty(t, out, "no %s activity", activityType)
	return out
}

// scheduledBy is the ActivityTaskScheduled event an activity event refers
// to, or 0.
func scheduledBy(e *historypb.HistoryEvent) int64 {
	switch {
	case e.GetActivityTaskStartedEventAttributes() != nil:
		return e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		return e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskFailedEventAttributes() != nil:
		return e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskTimedOutEventAttributes() != nil:
		return e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
	}
	return 0
}

// localMarker is the first LocalActivity marker of an activity type.
func localMarker(t testing.TB, h *historypb.History, activityType string) *historypb.HistoryEvent {
	t.Helper()
	for _, e := range h.GetEvents() {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != localActivityMarkerName {
			continue
		}
		var m localActivityMarker
		decode(t, a.GetDetails()["data"], &m)
		if m.ActivityType == activityType {
			return e
		}
	}
	t.Fatalf("no local %s", activityType)
	return nil
}

// moveBefore moves event e to just before the first of events.
func moveBefore(t testing.TB, h *historypb.History, e *historypb.HistoryEvent, events []*historypb.HistoryEvent) {
	t.Helper()
	remove(h, []*historypb.HistoryEvent{e})
	i := slices.Index(h.Events, events[0])
	require.GreaterOrEqual(t, i, 0)
	h.Events = slices.Insert(h.Events, i, e)
}

func remove(h *historypb.History, events []*historypb.HistoryEvent) {
	h.Events = slices.DeleteFunc(h.Events, func(e *historypb.HistoryEvent) bool { return slices.Contains(events, e) })
}

// makeLocal replaces a regular activity's events with the LocalActivity
// marker a local activity with the same result leaves.
func makeLocal(t testing.TB, h *historypb.History, activityType string) {
	t.Helper()
	events := regularEvents(t, h, activityType)
	closed := events[len(events)-1].GetActivityTaskCompletedEventAttributes()
	require.NotNil(t, closed, "%s completed", activityType)
	data, err := converter.GetDefaultDataConverter().ToPayloads(localActivityMarker{ActivityType: activityType, Attempt: 1})
	require.NoError(t, err)
	marker := &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
		Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: localActivityMarkerName,
			Details:    map[string]*commonpb.Payloads{"data": data, "result": closed.GetResult()},
		}}}
	i := slices.Index(h.Events, events[0])
	remove(h, events)
	h.Events = slices.Insert(h.Events, i, marker)
}

// newEventID gives an event added by an edit an ID no recorded event has,
// so renumber can map references to it.
var newEventID int64 = 1 << 40

func added(e *historypb.HistoryEvent) *historypb.HistoryEvent {
	newEventID++
	e.EventId = newEventID
	return e
}

// makeRegular replaces a local activity's marker with the events a regular
// activity with the same result leaves: scheduled, started, completed.
func makeRegular(t testing.TB, h *historypb.History, activityType string) {
	t.Helper()
	marker := localMarker(t, h, activityType)
	scheduled := added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
		Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: activityType}}}})
	started := added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED,
		Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{
			ScheduledEventId: scheduled.EventId}}})
	completed := added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
		Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
			ScheduledEventId: scheduled.EventId, StartedEventId: started.EventId,
			Result: marker.GetMarkerRecordedEventAttributes().GetDetails()["result"]}}})
	i := slices.Index(h.Events, marker)
	remove(h, []*historypb.HistoryEvent{marker})
	h.Events = slices.Insert(h.Events, i, scheduled, started, completed)
}

// splitTask ends the workflow task before marker e and records e, and what
// follows, in a new one: as a move whose local steps outlast the task.
func splitTask(t testing.TB, h *historypb.History, e *historypb.HistoryEvent) {
	t.Helper()
	i := slices.Index(h.Events, e)
	require.GreaterOrEqual(t, i, 0)
	h.Events = slices.Insert(h.Events, i,
		added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED}),
		added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED}),
		added(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED}))
}

// renumber gives the events consecutive IDs from 1 and points the activity
// events at their scheduled and started events' new IDs.
func renumber(h *historypb.History) {
	ids := map[int64]int64{}
	for i, e := range h.Events {
		if e.GetEventId() != 0 {
			ids[e.GetEventId()] = int64(i + 1)
		}
		e.EventId = int64(i + 1)
	}
	for _, e := range h.Events {
		switch a := e.GetAttributes().(type) {
		case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
			a.ActivityTaskStartedEventAttributes.ScheduledEventId = ids[a.ActivityTaskStartedEventAttributes.ScheduledEventId]
		case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
			c := a.ActivityTaskCompletedEventAttributes
			c.ScheduledEventId, c.StartedEventId = ids[c.ScheduledEventId], ids[c.StartedEventId]
		case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
			c := a.ActivityTaskFailedEventAttributes
			c.ScheduledEventId, c.StartedEventId = ids[c.ScheduledEventId], ids[c.StartedEventId]
		case *historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes:
			c := a.ActivityTaskTimedOutEventAttributes
			c.ScheduledEventId, c.StartedEventId = ids[c.ScheduledEventId], ids[c.StartedEventId]
		case *historypb.HistoryEvent_ChildWorkflowExecutionStartedEventAttributes:
			c := a.ChildWorkflowExecutionStartedEventAttributes
			c.InitiatedEventId = ids[c.InitiatedEventId]
		case *historypb.HistoryEvent_ChildWorkflowExecutionCompletedEventAttributes:
			c := a.ChildWorkflowExecutionCompletedEventAttributes
			c.InitiatedEventId, c.StartedEventId = ids[c.InitiatedEventId], ids[c.StartedEventId]
		case *historypb.HistoryEvent_ChildWorkflowExecutionFailedEventAttributes:
			c := a.ChildWorkflowExecutionFailedEventAttributes
			c.InitiatedEventId, c.StartedEventId = ids[c.InitiatedEventId], ids[c.StartedEventId]
		}
	}
}

func fixtureAt(t *testing.T, name string, version int) Fixture {
	t.Helper()
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	for _, fx := range fixtures {
		if fx.Name() == name && fx.Version == version {
			return fx
		}
	}
	t.Fatalf("no fixture %s.v%d", name, version)
	return Fixture{}
}
