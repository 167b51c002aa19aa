package replay

import (
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestOrderingCatchesWrongRollouts shows the rollout checks can fail: a
// recorded rollout rearranged into what a wrongly ordered one would have
// recorded (a step admitted before the previous one's bake timer fired,
// without its gate or while it ran, before its pools were on the config and
// Available; a halted step admitted again without a resume; a rollback with
// no failed round of analysis before it; its counts kept while a step's
// pools move; its first step admitted before the cluster it waits for
// completed) fails
// checkFixture with the rule it breaks; the fixtures as recorded pass.
func TestOrderingCatchesWrongRollouts(t *testing.T) {
	first := func(h *historypb.History, typ enumspb.EventType) []*historypb.HistoryEvent {
		for _, e := range h.GetEvents() {
			if e.GetEventType() == typ {
				return []*historypb.HistoryEvent{e}
			}
		}
		t.Fatalf("no %s event", typ)
		return nil
	}
	runGuardCases(t, "rollout", []guardCase{
		{"as recorded", "rollout-completed", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, halted", "rollout-halted", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, resumed", "rollout-resumed", func(testing.TB, *historypb.History) {}, ""},
		{"a step admitted before the previous step's bake", "rollout-completed", func(t testing.TB, h *historypb.History) {
			remove(h, first(h, enumspb.EVENT_TYPE_TIMER_FIRED))
		}, "bake timer fired"},
		{"a step admitted without the previous step's gate", "rollout-completed", func(t testing.TB, h *historypb.History) {
			remove(h, append(append(first(h, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
				first(h, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED)...), first(h, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED)...))
		}, "gate completed"},
		{"a step's gate still running when the next step is admitted", "rollout-completed", func(t testing.TB, h *historypb.History) {
			remove(h, first(h, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED))
		}, "ended (event 0)"},
		{"a step admitted before the previous step's pools were there", "rollout-completed", func(t testing.TB, h *historypb.History) {
			remove(h, regularEvents(t, h, "WaitRolloutStep"))
		}, "were on the config and Available"},
		{"as recorded, rolled back", "rollout-rolled-back", func(testing.TB, *historypb.History) {}, ""},
		{"a rollback with no failed round before it", "rollout-rolled-back", func(t testing.TB, h *historypb.History) {
			// Every round, not only the first: none failed before the Warning.
			rounds := map[int64]bool{}
			var out []*historypb.HistoryEvent
			for _, e := range h.GetEvents() {
				if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "MeasureRollout" {
					rounds[e.GetEventId()] = true
				}
				if rounds[e.GetEventId()] || rounds[scheduledBy(e)] {
					out = append(out, e)
				}
			}
			remove(h, out)
		}, "a RolloutRolledBack with neither"},
		{"the counts kept while the step's pools still move", "rollout-completed", func(t testing.TB, h *historypb.History) {
			// The status write before the first keeper (its Baking) taken
			// out: the last phase written before it is the step's Progressing.
			var keeper, write int64
			for _, e := range h.GetEvents() {
				a := e.GetActivityTaskScheduledEventAttributes()
				switch {
				case a == nil:
				case a.GetActivityType().GetName() == "KeepRolloutCounts" && keeper == 0:
					keeper = e.GetEventId()
				case a.GetActivityType().GetName() == "SetRolloutStatus" && keeper == 0:
					write = e.GetEventId()
				}
			}
			var out []*historypb.HistoryEvent
			for _, e := range h.GetEvents() {
				if e.GetEventId() == write || scheduledBy(e) == write {
					out = append(out, e)
				}
			}
			remove(h, out)
		}, "only while the rollout waits on other than its pools"},
		{"as recorded, awaiting another cluster", "rollout-awaited-clusters", func(testing.TB, *historypb.History) {}, ""},
		{"the first step admitted before the awaited cluster's rollout completed", "rollout-awaited-clusters", func(t testing.TB, h *historypb.History) {
			// The looks that read staging's rollout completed taken out.
			looks := map[int64]bool{}
			for _, c := range activityCalls(t, h) {
				var look activities.RolloutLook
				if c.Type != "LookAtRollout" || c.Closed == 0 {
					continue
				}
				decode(t, c.Result, &look)
				if len(look.After) > 0 && look.After[0].Completed() {
					looks[c.Scheduled] = true
				}
			}
			var out []*historypb.HistoryEvent
			for _, e := range h.GetEvents() {
				if looks[e.GetEventId()] || looks[scheduledBy(e)] {
					out = append(out, e)
				}
			}
			remove(h, out)
		}, "before a look read every awaited cluster's rollout completed"},
		{"a halted step admitted again without a resume", "rollout-resumed", func(t testing.TB, h *historypb.History) {
			var resume []*historypb.HistoryEvent
			for _, e := range h.GetEvents() {
				if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && (a.GetSignalName() == wfapi.SignalResume || a.GetSignalName() == wfapi.SignalRecheck) {
					resume = append(resume, e)
				}
			}
			remove(h, resume)
		}, "without a resume"},
	})
}
