package replay

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// checkRollout: a staged rollout admits a step's pools (AdmitRolloutStep,
// the only write that lets pools move) only after the previous step's
// pools were confirmed and Available (its WaitRolloutStep ended Ready), its
// gate, if any, completed, and its bake timer, if any, fired; a step is
// admitted again only after a halt and a resume; a halt records its
// Warning; every activity acts on the config the workflow was started for;
// a rollout that completed took its last step's wait as Ready. With an
// analysis (v4): every round measures the config and the step admitted
// last; a step with an analysis is followed by the next only once its last
// round concluded (no metric inconclusive); a rollback's Warning follows a
// failure (a round out of bounds or inconclusive, a halted wait, a failed
// gate), and its step is admitted again only after a look lifted it (a
// retry, a new spec).
func checkRollout(t testing.TB, h *historypb.History) {
	t.Helper()
	var in wfapi.RolloutInput
	startInput(t, h, &in)
	require.NotEmpty(t, in.Config)

	type step struct {
		n          int32
		adm        activities.Admitted
		admittedAt int64 // event ID of the admission's close
		readyAt    int64 // event ID of the Ready wait's close; 0: not ready
		haltedAt   int64 // event ID of a Halted wait's close or a failed gate's
		// rounds are the step's MeasureRollout rounds, by their close;
		// rolledBackAt the close of its RolloutRolledBack Warning.
		rounds       map[int64][]rollout.Measurement
		rolledBackAt int64
	}
	var cur *step
	calls := activityCalls(t, h)
	kids := children(h)
	events := h.GetEvents()
	// What happened between two event IDs.
	firedBetween := func(from, to int64) int64 {
		for _, e := range events {
			if e.GetEventId() > from && e.GetEventId() < to && e.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED {
				return e.GetEventId()
			}
		}
		return 0
	}
	signalBetween := func(name string, from, to int64) bool {
		for _, e := range events {
			if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == name &&
				e.GetEventId() > from && e.GetEventId() < to {
				return true
			}
		}
		return false
	}
	gateBetween := func(from, to int64) (done, failed int64) {
		for _, c := range kids {
			if c.Initiated > from && c.Closed != 0 && c.Closed < to {
				if c.CloseType == enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED {
					done = c.Closed
				} else {
					failed = c.Closed
				}
			}
		}
		return done, failed
	}
	// lookBetween is the close of a look between two event IDs that
	// satisfies ok, 0 for none.
	lookBetween := func(from, to int64, ok func(activities.RolloutLook) bool) int64 {
		for _, c := range calls {
			if c.Type == "LookAtRollout" && c.Closed > from && c.Closed < to {
				var look activities.RolloutLook
				decode(t, c.Result, &look)
				if ok(look) {
					return c.Closed
				}
			}
		}
		return 0
	}
	// verdictBetween is the close of a look between two event IDs whose
	// verdict satisfies ok, 0 for none: what a driven rollout (v3) acts on
	// besides timers and signals (a promote, an abort, a retry).
	verdictBetween := func(from, to int64, ok func(rollout.Verdict) bool) int64 {
		return lookBetween(from, to, func(look activities.RolloutLook) bool { return ok(look.Verdict) })
	}
	halts, awaited := 0, false
	for _, c := range calls {
		require.False(t, c.Local, "a rollout runs no local activity: %s", c.Type)
		switch c.Type {
		case "LookAtRollout", "SetRolloutStatus":
		case "AdmitRolloutStep":
			var ai activities.AdmitInput
			decode(t, c.Input, &ai)
			require.Equal(t, in.Config, ai.Config)
			if cur != nil {
				aborted := verdictBetween(cur.admittedAt, c.Scheduled, func(v rollout.Verdict) bool { return v.Abort != nil })
				switch {
				case ai.Step == cur.n && cur.rolledBackAt != 0:
					// v4: a rolled-back step is taken again once a look lifted
					// the rollback (a retry, or a spec of another generation).
					require.NotZero(t, verdictBetween(cur.rolledBackAt, c.Scheduled, func(v rollout.Verdict) bool { return v.ClearAbort }),
						"step %d admitted again after its rollback without a retry or a new spec", ai.Step)
				case ai.Step == cur.n && cur.haltedAt == 0 && aborted != 0:
					// v3: an aborted step is taken again at a retry.
					require.True(t, drivenRollout(h), "an abort before driveChange")
					require.NotZero(t, verdictBetween(aborted, c.Scheduled, func(v rollout.Verdict) bool { return v.Answered.Retry != "" }),
						"step %d admitted again after its abort without a retry", ai.Step)
				case ai.Step == cur.n:
					require.NotZero(t, cur.haltedAt, "step %d admitted again without a halt", ai.Step)
					// v2 hears a resume request (the annotation) as a recheck.
					resumed := signalBetween(wfapi.SignalResume, cur.haltedAt, c.Scheduled) ||
						plannedRollout(h) && signalBetween(wfapi.SignalRecheck, cur.haltedAt, c.Scheduled)
					require.True(t, resumed, "step %d admitted again after its halt without a resume", ai.Step)
				default:
					// v3: a promote --full takes the last step at once.
					full := verdictBetween(cur.admittedAt, c.Scheduled, func(v rollout.Verdict) bool { return v.Full }) != 0
					if full {
						require.True(t, drivenRollout(h), "a promote --full before driveChange")
						require.Greater(t, ai.Step, cur.n, "steps in order")
						break
					}
					require.Equal(t, cur.n+1, ai.Step, "steps in order")
					require.NotZero(t, cur.readyAt, "step %d admitted before step %d's pools were on the config and Available", ai.Step, cur.n)
					if cur.adm.Gate != nil {
						done, _ := gateBetween(cur.readyAt, c.Scheduled)
						require.NotZero(t, done, "step %d admitted before step %d's gate completed", ai.Step, cur.n)
					}
					n := cur.n
					promoted := verdictBetween(cur.admittedAt, c.Scheduled, func(v rollout.Verdict) bool { return v.Promoted >= n }) != 0
					if cur.adm.Approval {
						require.True(t, promoted, "step %d admitted before step %d's approval (a promote)", ai.Step, cur.n)
					}
					if cur.adm.Pause > 0 {
						require.True(t, promoted || firedBetween(cur.readyAt, c.Scheduled) != 0, "step %d admitted before step %d's bake timer fired", ai.Step, cur.n)
					}
					if cur.adm.Analysis != nil {
						last := lastRound(cur.rounds, c.Scheduled)
						require.NotNil(t, last, "step %d admitted before step %d's analysis measured", ai.Step, cur.n)
						for _, m := range last {
							require.NotEqual(t, v1alpha1.MeasurementInconclusive, m.Phase, "step %d admitted while step %d's analysis was inconclusive: %+v", ai.Step, cur.n, m)
						}
					}
				}
			} else {
				require.Positive(t, ai.Step)
				if awaited {
					// v4: the first step of a rollout that waits for other
					// clusters is admitted only once a look read each of
					// them completed.
					require.NotZero(t, lookBetween(0, c.Scheduled, func(look activities.RolloutLook) bool {
						return len(look.After) > 0 && !slices.ContainsFunc(look.After, func(r rollout.ClusterRollout) bool { return !r.Completed() })
					}), "step %d admitted before a look read every awaited cluster's rollout completed", ai.Step)
				}
			}
			if c.Closed == 0 {
				continue
			}
			s := &step{n: ai.Step, admittedAt: c.Closed, rounds: map[int64][]rollout.Measurement{}}
			decode(t, c.Result, &s.adm)
			cur = s
		case "WaitRolloutStep":
			var wi activities.WaitInput
			decode(t, c.Input, &wi)
			require.Equal(t, in.Config, wi.Config)
			require.NotNil(t, cur, "a wait before any admission")
			require.Equal(t, cur.n, wi.Step, "the wait is for the step admitted last")
			if c.Closed == 0 {
				continue
			}
			var w activities.StepWait
			decode(t, c.Result, &w)
			switch w.Outcome {
			case activities.StepReady:
				cur.readyAt, cur.haltedAt = c.Closed, 0
			case activities.StepHalted:
				cur.haltedAt = c.Closed
			}
		case "MeasureRollout":
			var mi activities.MeasureInput
			decode(t, c.Input, &mi)
			require.Equal(t, in.Config, mi.Config)
			require.True(t, hasVersionMarker(h, "rollout-analysis"), "a round of analysis before analysisChange")
			require.NotNil(t, cur, "a round of analysis before any admission")
			require.Equal(t, cur.n, mi.Step, "a round measures the step admitted last")
			require.NotNil(t, cur.adm.Analysis, "a round of a step admitted without an analysis")
			if c.Closed != 0 {
				var round []rollout.Measurement
				decode(t, c.Result, &round)
				require.Len(t, round, len(mi.Metrics), "a round measures every metric")
				cur.rounds[c.Closed] = round
			}
		case "AwaitClusters":
			var ai activities.AwaitClustersInput
			decode(t, c.Input, &ai)
			require.Equal(t, in.Config, ai.Config)
			require.True(t, hasVersionMarker(h, "rollout-after"), "another cluster awaited before afterChange")
			require.Nil(t, cur, "another cluster awaited after a step was admitted: only the first step waits")
			awaited = true
		case "KeepRolloutCounts":
			var ki activities.KeepCountsInput
			decode(t, c.Input, &ki)
			require.Equal(t, in.Config, ki.Config)
			require.True(t, hasVersionMarker(h, "rollout-counts"), "the counts kept before countsChange")
			phase := lastPhaseWritten(t, calls, c.Scheduled)
			require.Contains(t, []v1alpha1.RolloutPhase{v1alpha1.RolloutPaused, v1alpha1.RolloutHalted, v1alpha1.RolloutAborted,
				v1alpha1.RolloutRolledBack, v1alpha1.RolloutBaking, v1alpha1.RolloutAwaitingApproval}, phase,
				"the counts kept (event %d) only while the rollout waits on other than its pools", c.Scheduled)
		case "RecordRolloutEvent":
			var ev activities.RolloutEventInput
			decode(t, c.Input, &ev)
			require.Equal(t, in.Config, ev.Config)
			if ev.Reason == v1alpha1.EventReasonRolloutRolledBack {
				require.True(t, hasVersionMarker(h, "rollout-analysis"), "a rollback before analysisChange")
				require.NotNil(t, cur, "a rollback before any step")
				_, failedGate := gateBetween(cur.admittedAt, c.Scheduled)
				require.True(t, cur.haltedAt != 0 || failedGate != 0 || failedRound(cur.rounds, c.Scheduled),
					"a RolloutRolledBack with neither a halted wait, a failed gate nor a failed or inconclusive round before it")
				cur.rolledBackAt = c.Closed
				continue
			}
			if ev.Reason != v1alpha1.EventReasonRolloutHalted {
				// A driven rollout (v3) tells of every change; only a halt
				// needs a failure before it.
				require.True(t, drivenRollout(h), "an event other than a halt (%s) from a rollout before driveChange", ev.Reason)
				require.Contains(t, []string{v1alpha1.EventReasonRolloutStepCompleted, v1alpha1.EventReasonRolloutPaused, v1alpha1.EventReasonRolloutResumed,
					v1alpha1.EventReasonRolloutPromoted, v1alpha1.EventReasonRolloutCompleted, v1alpha1.EventReasonRolloutAborted}, ev.Reason)
				continue
			}
			require.NotNil(t, cur, "a halt before any step")
			if cur.haltedAt == 0 {
				_, failed := gateBetween(cur.readyAt, c.Scheduled)
				require.NotZero(t, failed, "a Warning with neither a halted wait nor a failed gate before it")
				cur.haltedAt = failed
			}
			halts++
		default:
			t.Fatalf("a rollout called %s", c.Type)
		}
	}
	if !isOpen(h) && lastEvent(h).GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		var res wfapi.RolloutResult
		result(t, h, &res)
		if res.Phase == string(v1alpha1.RolloutCompleted) && cur != nil {
			require.NotZero(t, cur.readyAt, "a rollout completed without its last step's pools on the config")
		}
	}
}

// lastPhaseWritten is the phase of the last status write that wrote one
// and closed before an event ID; "" for none.
func lastPhaseWritten(t testing.TB, calls []*call, before int64) v1alpha1.RolloutPhase {
	t.Helper()
	var phase v1alpha1.RolloutPhase
	var at int64
	for _, c := range calls {
		if c.Type != "SetRolloutStatus" || c.Closed == 0 || c.Closed > before || c.Closed < at {
			continue
		}
		var in activities.RolloutStatusInput
		decode(t, c.Input, &in)
		if in.Phase != "" {
			phase, at = in.Phase, c.Closed
		}
	}
	return phase
}

// lastRound is the round of analysis closed last before an event ID; nil
// for none.
func lastRound(rounds map[int64][]rollout.Measurement, before int64) []rollout.Measurement {
	var at int64
	for closed := range rounds {
		if closed < before && closed > at {
			at = closed
		}
	}
	return rounds[at]
}

// failedRound reports whether a round closed before an event ID judged a
// metric out of bounds or inconclusive: what may fail a step.
func failedRound(rounds map[int64][]rollout.Measurement, before int64) bool {
	for closed, round := range rounds {
		for _, m := range round {
			if closed < before && m.Phase != v1alpha1.MeasurementSuccessful {
				return true
			}
		}
	}
	return false
}

// admittedSteps lists the steps a rollout admitted, in order.
func admittedSteps(t testing.TB, h *historypb.History) []int32 {
	var out []int32
	for _, c := range activityCalls(t, h) {
		if c.Type == "AdmitRolloutStep" {
			var ai activities.AdmitInput
			decode(t, c.Input, &ai)
			out = append(out, ai.Step)
		}
	}
	return out
}

func countEvents(h *historypb.History, typ enumspb.EventType) int {
	n := 0
	for _, e := range h.GetEvents() {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// plannedRollout reports whether a rollout history is the planner's (v2 on):
// its first task records the rollout-planner version marker.
func plannedRollout(h *historypb.History) bool { return hasVersionMarker(h, "rollout-planner") }

// drivenRollout reports whether a rollout history is of the driven rollout
// (v3, workflows.driveChange): it records an event for every change.
func drivenRollout(h *historypb.History) bool { return hasVersionMarker(h, "rollout-drive") }

func hasVersionMarker(h *historypb.History, change string) bool {
	for _, e := range h.GetEvents() {
		if a := e.GetMarkerRecordedEventAttributes(); a != nil && a.GetMarkerName() == "Version" {
			if strings.Contains(a.String(), change) {
				return true
			}
		}
	}
	return false
}
