package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestOrdering reads every fixture and checks, from the events alone, that
// the recorded run did its steps in the order the design requires: a
// switch's activities in their order, a release's looks in theirs. The same
// checks run in the recorder before it writes a fixture, so a fixture of a
// run that went wrong is never committed. For a switch, whose steps are
// local activities with no input in the history, the inputs are read from a
// replay (see replaySteps).
func TestOrdering(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, fx := range fixtures {
		t.Run(fmt.Sprintf("%s.v%d", fx.Name(), fx.Version), func(t *testing.T) {
			h, err := ReadHistory(fx.Path)
			require.NoError(t, err)
			exec, err := fx.Execution()
			require.NoError(t, err)
			checkFixture(t, fx, exec, h)
		})
	}
}

// TestScenariosRecorded: the scenarios the issues ask for exist, each of
// its kind's current shape (shapeVersions), and at least one history was
// exported while its workflow was still running, as a new worker replays
// it.
func TestScenariosRecorded(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	have := map[string]bool{} // of its kind's current shape (shapeVersions)
	open := 0
	for _, fx := range fixtures {
		have[fx.Name()] = have[fx.Name()] || fx.Version == shapeVersions[fx.Kind]
		h, err := ReadHistory(fx.Path)
		require.NoError(t, err)
		if isOpen(h) {
			open++
		}
	}
	for _, name := range recordedScenarios {
		require.True(t, have[name], "no fixture of scenario %s of its kind's current shape in %s", name, Dir)
	}
	require.GreaterOrEqual(t, open, 1, "histories exported while running")
}

// recordedScenarios are the fixtures the recorder records.
var recordedScenarios = []string{
	"switch-first-resolution", "switch-confirmed", "switch-open-at-observe", "switch-rolled-back",
	"switch-confirmed-from-deleting", "switch-claim-refused", "switch-abandoned-claim",
	"switch-reresolve-up-to-date", "switch-reresolve-moved", "switch-continued-as-new", "switch-after-continue-as-new",
	"switch-rerun-landed", "switch-rerun-rolled-back",
	"release-at-once", "release-waited", "release-waited-for-claim",
	"rollout-completed", "rollout-halted", "rollout-resumed", "rollout-driven", "rollout-rolled-back",
	"rollout-awaited-clusters", "operator-requests",
}

// TestFixtureExecutions: every fixture keeps the execution it was recorded
// from, that execution is the history's own run, and no
// execution file is left without its fixture.
func TestFixtureExecutions(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	for _, fx := range fixtures {
		exec, err := fx.Execution()
		require.NoError(t, err)
		h, err := ReadHistory(fx.Path)
		require.NoError(t, err)
		checkExecution(t, fx, exec, h)
	}
	stray, err := strayExecutions(Dir, fixtures)
	require.NoError(t, err)
	require.Empty(t, stray, "execution files without their fixture")
}

// checkExecution: the execution kept with a fixture is the run the history
// is of, under the ID its workflow type is started with.
func checkExecution(t testing.TB, fx Fixture, exec Execution, h *historypb.History) {
	t.Helper()
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	require.Equal(t, started.GetOriginalExecutionRunId(), exec.RunID, "%s: the run the history was recorded from", fx.Path)
	switch fx.Kind {
	case "switch":
		_, err := wfapi.SwitchPool(exec.WorkflowID, wfapi.PoolRef{})
		require.NoError(t, err, "%s: a switch's workflow ID %q names its cluster and pool", fx.Path, exec.WorkflowID)
	case "release":
		var in wfapi.ReleaseInput
		startInput(t, h, &in)
		require.NoError(t, wfapi.CheckReleaseID(exec.WorkflowID, in.Config), "%s: a release's workflow ID", fx.Path)
	case "rollout":
		var in wfapi.RolloutInput
		startInput(t, h, &in)
		require.NoError(t, wfapi.CheckRolloutID(exec.WorkflowID, in.Config), "%s: a rollout's workflow ID", fx.Path)
	case "operator":
		c, ok := wfapi.ClusterOf(exec.WorkflowID)
		require.True(t, ok, "%s: the operator's workflow ID %q names its cluster", fx.Path, exec.WorkflowID)
		require.Equal(t, c.OperatorWorkflowID(), exec.WorkflowID, "%s: the operator's workflow ID", fx.Path)
	default:
		t.Fatalf("%s: no %s workflow is recorded", fx.Path, fx.Kind)
	}
}

// checkFixture checks a history against what its workflow must do, and
// against what its scenario did. exec is the execution the history was
// recorded from.
func checkFixture(t testing.TB, fx Fixture, exec Execution, h *historypb.History) {
	t.Helper()
	require.NoError(t, checkWorkflowType(fx, h))
	checkExecution(t, fx, exec, h)
	checkOneAtATime(t, h)
	if fx.Kind != "rollout" {
		require.Empty(t, children(h), "only a rollout starts a child: its gate")
	}
	switch fx.Kind {
	case "switch":
		checkSwitch(t, exec, h)
	case "release":
		checkRelease(t, h)
	case "rollout":
		checkRollout(t, h)
	case "operator":
		checkOperator(t, h)
	}
	if check, ok := scenarioChecks[fx.Name()]; ok {
		check(t, h)
	}
}

// checkOneAtATime: no workflow does two things at once. Each activity (and
// each child: a rollout's gate) is started only after the one before it
// ended. A planner's rollout (v2) is the one exception, by design: while a
// step's wait or its gate runs it hears rechecks, and looks
// (LookAtRollout) and writes its status (SetRolloutStatus) meanwhile; the
// waits and gates are then one at a time among themselves, the rest among
// themselves, and nothing but a look or a status write overlaps a wait or
// a gate. A step's analysis (v4) is a second exception: its rounds
// (MeasureRollout) run in a coroutine of their own beside whatever the step
// does, and a failed round's rollback (its Warning and status) may begin
// before the wait it interrupts is cancelled; checkRollout checks that
// each round measures the step admitted last. The third (v5): the keeper
// of a waiting rollout's counts (KeepRolloutCounts) runs beside its hold,
// approval or bake, and is not waited for when cancelled; checkRollout
// checks that it follows a status write of a phase that waits. A wait for
// other clusters (AwaitClusters, v4) is a long one as a step's wait is: a
// signal cancels it, and the look that follows may start before its
// cancellation is recorded.
func checkOneAtATime(t testing.TB, h *historypb.History) {
	t.Helper()
	type step struct {
		what          string
		start, closed int64
	}
	var steps, long []step
	planned, analysed, counted := plannedRollout(h), hasVersionMarker(h, "rollout-analysis"), hasVersionMarker(h, "rollout-counts")
	for _, c := range activityCalls(t, h) {
		if analysed && c.Type == "MeasureRollout" || counted && c.Type == "KeepRolloutCounts" {
			continue
		}
		s := step{"activity " + c.Type, c.Scheduled, c.Closed}
		if planned && c.Type == "WaitRolloutStep" || c.Type == "AwaitClusters" {
			long = append(long, s)
			continue
		}
		steps = append(steps, s)
	}
	for _, c := range children(h) { // a rollout's gates
		s := step{"child " + c.Type, c.Initiated, c.Closed}
		if planned {
			long = append(long, s)
			continue
		}
		steps = append(steps, s)
	}
	oneAtATime := func(steps []step) {
		slices.SortFunc(steps, func(a, b step) int { return int(a.start - b.start) })
		for i := 1; i < len(steps); i++ {
			prev, cur := steps[i-1], steps[i]
			require.Truef(t, prev.closed != 0 && prev.closed < cur.start,
				"%s (event %d) started before %s (event %d) ended (event %d)", cur.what, cur.start, prev.what, prev.start, prev.closed)
		}
	}
	oneAtATime(steps)
	oneAtATime(long)
	for _, l := range long {
		for _, s := range steps {
			during := s.start > l.start && (l.closed == 0 || s.start < l.closed)
			beside := s.what == "activity LookAtRollout" || s.what == "activity SetRolloutStatus" || analysed && s.what == "activity RecordRolloutEvent"
			require.Falsef(t, during && !beside,
				"%s (event %d) started while %s (event %d) ran", s.what, s.start, l.what, l.start)
		}
	}
}

// A switch (v1) is a top-level execution under its pool's switch ID. A
// move takes one workflow task, every step a local activity: Protect,
// Claim, Confirm (its live read of the target is the switch's check after
// the claim) or RollBack, possibly Protect and Confirm again (the target
// found recreated, unprotected) or RollBack (a Confirm refused),
// RecordEvent, WakeReleases. An operator's start (no input) first observes
// the pool with a regular Observe, in its first task, and plans the move
// from it; the move's steps then run in the task its completion starts;
// one that finds nothing to move ends "up to date". A switch with no target
// clears a claim no switch works on: AbandonClaim, WakeReleases.
//
// A crash re-runs the whole task, and the re-run's Claim decides from the
// class's status (lastSwitch) what an earlier run wrote: its confirm landed
// (Landed: the event is due, nothing else) or its roll back (RolledBack: the
// Warning, nothing else). Those are the only shapes in which RecordEvent
// follows the Claim with no write between.

// stepOrder is one order of a switch's steps after an operator's
// Observe. A switch that ended with its outcome ran at least the first
// required steps; a running one, or one whose pool went away, a prefix.
type stepOrder struct {
	steps    []string
	required int
}

var switchOrders = map[string][]stepOrder{
	wfapi.OutcomeConfirmed: {
		{[]string{"Protect", "Claim", "Confirm", "RecordEvent", "WakeReleases"}, 4},
		// Confirm found the target recreated, unprotected: protected
		// again, confirmed
		{[]string{"Protect", "Claim", "Confirm", "Protect", "Confirm", "RecordEvent", "WakeReleases"}, 6},
		// a re-run of the task whose Claim found the earlier run's confirm
		// (claimResult: landed): the move stands and its event is recorded
		{[]string{"Protect", "Claim", "RecordEvent", "WakeReleases"}, 3},
		// a roll back that found the earlier run's confirm (a re-run whose
		// Protect was refused since, or whose confirm landed meanwhile):
		// the move stands and is reported
		{[]string{"Protect", "Claim", "Confirm", "RollBack", "RecordEvent", "WakeReleases"}, 5},
		{[]string{"Protect", "Claim", "Confirm", "Protect", "RollBack", "RecordEvent", "WakeReleases"}, 6},
		{[]string{"Protect", "Claim", "Confirm", "Protect", "Confirm", "RollBack", "RecordEvent", "WakeReleases"}, 7},
		{[]string{"Protect", "RollBack", "RecordEvent", "WakeReleases"}, 3},
	},
	wfapi.OutcomeRolledBack: {
		// Confirm refused the target (missing, in deletion, of another class)
		{[]string{"Protect", "Claim", "Confirm", "RollBack", "RecordEvent", "WakeReleases"}, 5},
		// the recreated target's protection was refused, or Confirm
		// refused it again once protected
		{[]string{"Protect", "Claim", "Confirm", "Protect", "RollBack", "RecordEvent", "WakeReleases"}, 6},
		{[]string{"Protect", "Claim", "Confirm", "Protect", "Confirm", "RollBack", "RecordEvent", "WakeReleases"}, 7},
		// the first protection was refused, or the Claim refused the
		// target: nothing was claimed
		{[]string{"Protect", "RollBack", "RecordEvent", "WakeReleases"}, 3},
		{[]string{"Protect", "Claim", "RollBack", "RecordEvent", "WakeReleases"}, 4},
		// a re-run of the task whose Claim found the earlier run's roll
		// back (claimResult: rolled back): its Warning, unless the failure
		// is over
		{[]string{"Protect", "Claim", "RecordEvent"}, 2},
		// a claim no switch works on, cleared; its config's release woken
		{[]string{"AbandonClaim", "WakeReleases"}, 2},
	},
	// the class moved since the starter looked, or another writer took the
	// claim: nothing was written
	wfapi.OutcomeSuperseded: {
		{[]string{"Protect", "Claim"}, 2},
		{[]string{"Protect", "Claim", "Confirm"}, 3},
		{[]string{"Protect", "Claim", "Confirm", "RollBack"}, 4},
	},
	// an operator's start found nothing to move
	wfapi.OutcomeUpToDate: {{nil, 0}},
	// a `reresolve` came before the claim: the first Protect cancelled
	// (recorded, or not), a Claim that only looked and found nothing of
	// the run, and continued as new with no input
	outcomeYielded: {{[]string{"Protect", "Claim"}, 2}, {[]string{"Claim"}, 1}},
}

// outcomeYielded stands for the outcome of a switch that yielded to a
// `reresolve` before its claim (workflows.protectBeforeClaim): it
// continues as new with no input and records no Outcome.
const outcomeYielded = "(yielded before the claim)"

// yielded reports whether a switch's steps end with a Claim that only
// looked and found nothing of the run (workflows.protectBeforeClaim): the
// switch yielded to a `reresolve` before its claim.
func yielded(calls []*call) bool {
	return len(calls) > 0 && calls[len(calls)-1].Type == "Claim" && claimResult(calls[len(calls)-1]) == claimUnclaimed
}

// orderRule is one ordering rule of the switch, read from the events
// alone: it returns what breaks it in calls (the steps after an operator's
// Observe), or "".
type orderRule struct {
	name  string
	check func(calls []*call) string
}

// before reports whether a call of one of types comes before calls[i].
func before(calls []*call, i int, types ...string) bool {
	return slices.ContainsFunc(calls[:i], func(c *call) bool { return slices.Contains(types, c.Type) })
}

// lastBefore is the last call before calls[i] of one of types, or nil.
func lastBefore(calls []*call, i int, types ...string) *call {
	for j := i - 1; j >= 0; j-- {
		if slices.Contains(types, calls[j].Type) {
			return calls[j]
		}
	}
	return nil
}

// typeOf is c's type, "" for nil.
func typeOf(c *call) string {
	if c == nil {
		return ""
	}
	return c.Type
}

// What a Claim's recorded result says (claimResult).
const (
	claimStands     = "claimed"     // the claim is written (or was, by this run): go on
	claimLanded     = "landed"      // an earlier run of the task confirmed
	claimRolledBack = "rolled back" // an earlier run of the task rolled back
	claimRefused    = "refused"     // the target is not protected: nothing claimed
	claimEnded      = "ended"       // superseded, or the pool is gone: nothing else
	claimUnclaimed  = "unclaimed"   // a Claim that only looked found nothing of the run
	claimUnknown    = "no result"   // running, or failed
)

// poolWrite reads a status step's recorded result (a local activity's is
// in its marker); ok is false when there is none.
func poolWrite(c *call) (w activities.PoolWrite, ok bool) {
	if c == nil || c.Result == nil {
		return w, false
	}
	dc := ReplayerOptions().DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	if err := dc.FromPayloads(c.Result, &w); err != nil {
		return w, false
	}
	return w, true
}

// claimResult reads a Claim's recorded result.
func claimResult(c *call) string {
	w, ok := poolWrite(c)
	if !ok {
		return claimUnknown
	}
	switch w.Outcome {
	case activities.PoolGone, activities.Superseded:
		return claimEnded
	case activities.Landed, activities.LandedThenGone:
		return claimLanded
	case activities.RolledBack:
		return claimRolledBack
	case activities.Refused:
		return claimRefused
	case activities.Unclaimed:
		return claimUnclaimed
	}
	return claimStands
}

// refusedFor is the reason a Confirm's recorded result refused its
// target for, "" when it did not.
func refusedFor(c *call) string {
	if w, ok := poolWrite(c); ok && w.Outcome == activities.Refused && w.Refusal != nil {
		return w.Refusal.Reason
	}
	return ""
}

var orderRules = []orderRule{
	{"every step of the move is local", func(calls []*call) string {
		for _, c := range calls {
			if !c.Local {
				return fmt.Sprintf("%s (event %d) is a regular activity; a move's steps are all local (only an operator's Observe, before the move, is regular)", c.Type, c.Scheduled)
			}
		}
		return ""
	}},
	{"the move in one workflow task", func(calls []*call) string {
		for _, c := range calls {
			if c.Task != calls[0].Task {
				return fmt.Sprintf("%s (event %d) runs in the workflow task completed at event %d, %s (event %d) in the one completed at event %d",
					c.Type, c.Scheduled, c.Task, calls[0].Type, calls[0].Scheduled, calls[0].Task)
			}
		}
		return ""
	}},
	{"Protect before Claim", func(calls []*call) string {
		for i, c := range calls {
			if c.Type == "Claim" && !before(calls, i, "Protect") {
				return fmt.Sprintf("Claim (event %d) claims a target no Protect protected", c.Scheduled)
			}
		}
		return ""
	}},
	{"Confirm after a Claim that stands", func(calls []*call) string {
		for i, c := range calls {
			if c.Type != "Confirm" {
				continue
			}
			claim := lastBefore(calls, i, "Claim")
			if claim == nil {
				return fmt.Sprintf("Confirm (event %d) follows no Claim: its live read cannot see a deletion that races the claim", c.Scheduled)
			}
			if r := claimResult(claim); r != claimStands {
				return fmt.Sprintf("Confirm (event %d) follows a Claim (event %d) whose result says %s", c.Scheduled, claim.Scheduled, r)
			}
		}
		return ""
	}},
	{"Protect and Confirm again only after a Confirm found the target unprotected", func(calls []*call) string {
		first := slices.IndexFunc(calls, func(c *call) bool { return c.Type == "Confirm" })
		for i, c := range calls {
			again := (c.Type == "Protect" && before(calls, i, "Claim")) || (c.Type == "Confirm" && i != first)
			if !again {
				continue
			}
			if first < 0 || first > i || refusedFor(calls[first]) != v1alpha1.ReasonSandboxConfigNotProtected {
				return fmt.Sprintf("%s (event %d) follows no first Confirm that found the target unprotected", c.Type, c.Scheduled)
			}
		}
		return ""
	}},
	{"RollBack of a claim after a Confirm that refused the target", func(calls []*call) string {
		for i, c := range calls {
			if c.Type != "RollBack" {
				continue
			}
			last := lastBefore(calls, i, "Claim", "Confirm")
			switch {
			case last == nil, typeOf(last) == "Claim" && claimResult(last) == claimRefused:
				// nothing claimed: a refused Protect or Claim
			case typeOf(last) == "Claim":
				return fmt.Sprintf("RollBack (event %d) of a claim follows no Confirm's live read after it", c.Scheduled)
			case refusedFor(last) == "":
				return fmt.Sprintf("RollBack (event %d) follows a Confirm (event %d) that did not refuse the target", c.Scheduled, last.Scheduled)
			}
		}
		return ""
	}},
	{"RecordEvent after the write", func(calls []*call) string {
		for i, c := range calls {
			if c.Type != "RecordEvent" || before(calls, i, "Confirm", "RollBack") {
				continue
			}
			// A re-run of the task whose Claim found the earlier run's
			// write reports that write.
			claim := lastBefore(calls, i, "Claim")
			if r := claimResult(claim); claim == nil || (r != claimLanded && r != claimRolledBack) {
				return fmt.Sprintf("RecordEvent (event %d) reports a write that did not happen yet (the Claim before it: %s)", c.Scheduled, r)
			}
		}
		return ""
	}},
	{"a re-run's Claim that found its earlier write ends the move", func(calls []*call) string {
		for i, c := range calls {
			if c.Type != "Claim" {
				continue
			}
			if r := claimResult(c); r == claimLanded || r == claimRolledBack {
				for _, next := range calls[i+1:] {
					if next.Type != "RecordEvent" && next.Type != "WakeReleases" {
						return fmt.Sprintf("%s (event %d) follows a Claim (event %d) that found the move %s", next.Type, next.Scheduled, c.Scheduled, r)
					}
				}
			}
		}
		return ""
	}},
	{"one move per switch", func(calls []*call) string {
		counts := map[string]int{}
		for _, c := range calls {
			counts[c.Type]++
		}
		for _, one := range []string{"Claim", "RollBack", "RecordEvent", "WakeReleases", "AbandonClaim"} {
			if counts[one] > 1 {
				return fmt.Sprintf("%d %s calls", counts[one], one)
			}
		}
		if counts["Confirm"] > 2 || counts["Protect"] > 2 {
			return fmt.Sprintf("%d Confirm and %d Protect calls", counts["Confirm"], counts["Protect"])
		}
		return ""
	}},
}

// switchOutcome is a switch's outcome: its result, or, for a run that
// continued as new, the Outcome it upserted; "" while it runs.
func switchOutcome(t testing.TB, h *historypb.History) string {
	t.Helper()
	upserted, ok := upsertedOutcome(t, h)
	switch lastEvent(h).GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		var res wfapi.SwitchResult
		result(t, h, &res)
		require.True(t, ok, "a switch upserts its Outcome before it completes")
		require.Equal(t, res.Outcome, upserted, "the Outcome search attribute is the result's")
		return res.Outcome
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		if yielded(activityCalls(t, h)) && !ok {
			// A `reresolve` came before the claim, and the Claim that
			// only looked found nothing of the run on the class: the
			// switch yielded, with nothing of its move written. (One
			// whose earlier task run had written goes on, and records
			// its outcome before it continues as new.)
			return outcomeYielded
		}
		require.True(t, ok, "a switch upserts its Outcome before it continues as new")
		return upserted
	}
	require.True(t, isOpen(h), "a switch ends by completing or continuing as new, not %s", lastEvent(h).GetEventType())
	return ""
}

// checkSwitch checks a switch : its workflow ID names
// its pool; an operator's start observes first, with a regular activity; the
// ordering rules (orderRules) hold and its steps are one of switchOrders for
// its outcome; and each step, local or regular, was given the inputs of its
// move (read from a replay for the local ones: see replaySteps).
func checkSwitch(t testing.TB, exec Execution, h *historypb.History) {
	t.Helper()
	pool, err := wfapi.SwitchPool(exec.WorkflowID, wfapi.PoolRef{})
	require.NoError(t, err, "the workflow ID %q names a pool", exec.WorkflowID)
	var in wfapi.SwitchInput
	startInput(t, h, &in)
	calls := activityCalls(t, h)
	outcome := switchOutcome(t, h)

	tasks := workflowTasksCompleted(h)
	move, steps := in, calls
	moveTask := int64(0) // the workflow task the move's steps must run in
	wantTasks, shape := 0, ""
	if in.IsMove() {
		require.Equal(t, pool, wfapi.PoolRef{Namespace: in.Pool.Namespace, Name: in.Pool.Name}, "the starter's switch acts on the pool its ID names")
		require.NotContains(t, callTypes(calls), "Observe", "the starter's switch decides on the starter's move, not on an Observe")
		// The starter's move is one workflow task: its first, and, once
		// the switch ended, its only one.
		if len(tasks) > 0 {
			moveTask = tasks[0]
		}
		wantTasks, shape = 1, "a starter's switch takes exactly one workflow task"
	} else {
		// An operator's start: the move is planned from a live read
		// recorded by a regular activity, before any other step.
		require.Equal(t, wfapi.SwitchInput{}, in, "an operator's start carries no input")
		if len(calls) == 0 {
			require.True(t, isOpen(h), "an operator's switch that ended observed its pool")
			return
		}
		first := calls[0]
		require.Equal(t, "Observe", first.Type, "an operator's switch observes its pool first")
		require.False(t, first.Local, "an operator's switch records its Observe with a regular activity")
		require.NotEmpty(t, tasks, "an Observe is scheduled by a workflow task")
		require.Equal(t, tasks[0], first.Task, "an operator's switch observes in its first workflow task")
		var observed wfapi.PoolRef
		decode(t, first.Input, &observed)
		require.Equal(t, pool, observed, "Observe reads the pool the workflow ID names")
		steps = calls[1:]
		if first.Closed == 0 || first.Result == nil {
			require.True(t, isOpen(h), "an Observe that did not complete ends nothing")
			return
		}
		var obs activities.Observation
		decode(t, first.Result, &obs)
		planned, moves := obs.NextMove(pool)
		if !moves {
			require.Empty(t, steps, "nothing to move: nothing but the Observe")
			want := wfapi.OutcomeUpToDate
			if !obs.Exists {
				want = wfapi.OutcomePoolGone
			}
			if outcome != "" {
				require.Equal(t, want, outcome)
			}
			return
		}
		move = planned
		// The move runs in the workflow task the Observe's completion
		// started, and the switch ends with it.
		for _, task := range tasks {
			if task > first.Closed {
				moveTask = task
				break
			}
		}
		wantTasks, shape = 2, "an operator's switch takes two workflow tasks, its Observe's and its move's"
	}

	for _, rule := range orderRules {
		if broken := rule.check(steps); broken != "" {
			t.Fatalf("switch: %s: %s (steps %v)", rule.name, broken, callTypes(steps))
		}
	}
	if len(steps) > 0 {
		require.NotZerof(t, moveTask, "the move's steps (%v) ran in no completed workflow task", callTypes(steps))
		require.Equalf(t, moveTask, steps[0].Task, "switch: the move in one workflow task: %s (event %d) runs in the task completed at event %d, not in the move's, completed at event %d",
			steps[0].Type, steps[0].Scheduled, steps[0].Task, moveTask)
	}
	if outcome != "" && wantTasks > 0 {
		require.Lenf(t, tasks, wantTasks, "%s (completed at events %v)", shape, tasks)
	}
	got := callTypes(steps)
	matches := func(orders []stepOrder, complete bool) bool {
		for _, o := range orders {
			if len(got) <= len(o.steps) && slices.Equal(got, o.steps[:len(got)]) && (!complete || len(got) >= o.required) {
				return true
			}
		}
		return false
	}
	var all []stepOrder
	for _, orders := range switchOrders {
		all = append(all, orders...)
	}
	switch outcome {
	case "", wfapi.OutcomePoolGone:
		require.Truef(t, matches(all, false), "steps %v of a running switch, or of one whose pool went away, are no prefix of an order", got)
	case wfapi.OutcomeUpToDate:
		t.Fatalf("a switch with a move (%+v) ended %q", move, outcome)
	case outcomeYielded:
		require.Truef(t, matches(switchOrders[outcome], true), "a switch that yielded ran %v", got)
		var next wfapi.SwitchInput
		decode(t, lastEvent(h).GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput(), &next)
		require.Equal(t, wfapi.SwitchInput{}, next, "a switch that yielded continues as new with no input: the next run plans from its own live read")
	default:
		orders, known := switchOrders[outcome]
		require.True(t, known, "unknown switch outcome %q", outcome)
		require.Truef(t, matches(orders, true), "a %s switch ran %v, not one of %v", outcome, got, orders)
	}
	checkStepInputs(t, exec, h, move, calls, steps, outcome)
}

// stepInput is the input of a step: a regular activity's from the history;
// a local one's, which the history does not hold, from the replay. The
// checks compare the fields that say what the step acts on, not whole
// inputs: a field added to a step's input later changes no command, and
// must not fail the fixtures recorded before it.
func stepInput[T any](t testing.TB, c *call, asked step) T {
	t.Helper()
	v, ok := asked.Input.(T)
	require.Truef(t, ok, "%s: the replay asked with a %T, not a %T", c.Type, asked.Input, *new(T))
	if c.Local {
		return v
	}
	var recorded T
	decode(t, c.Input, &recorded)
	return recorded
}

// checkStepInputs checks what a switch gave each step. The regular
// steps' inputs are in the history; the local ones' are read from a replay.
func checkStepInputs(t testing.TB, exec Execution, h *historypb.History, in wfapi.SwitchInput, calls, steps []*call, outcome string) {
	t.Helper()
	replayed := replaySteps(t, exec, h)
	if outcome == outcomeYielded && len(replayed) == len(calls)+1 && replayed[len(calls)].Type == "Protect" {
		// The first Protect, cancelled by the yield before it ended:
		// asked for, never recorded.
		replayed = replayed[:len(calls)]
	}
	require.Len(t, replayed, len(calls), "the replay asks for the recorded steps")
	offset := len(calls) - len(steps) // an operator's Observe
	var claim activities.PoolWrite
	var claimed bool // a Claim whose claim stands
	// a write that moved the class: Confirm, or a RollBack or a re-run's
	// Claim that found an earlier run's confirm
	var moved bool
	for i, c := range steps {
		r := replayed[offset+i]
		require.Equal(t, c.Type, r.Type, "step %d", offset+i+1)
		require.Equal(t, c.Local, r.Local, "%s is local: the replay asks for it as the history holds it", c.Type)
		switch c.Type {
		case "Protect":
			p := stepInput[activities.ProtectInput](t, c, r)
			require.Equal(t, in.To, p.Config, "Protect protects the target")
			require.Equal(t, in.Class, p.Class, "Protect protects the target for the class")
		case "Claim":
			p := stepInput[activities.ClaimInput](t, c, r)
			require.Equal(t, in.Pool, p.Pool, "Claim claims for the switch's pool")
			require.Equal(t, in.Class, p.Class, "Claim claims for the move's class")
			require.Equal(t, in.To, p.Config, "Claim claims the target")
			require.Equal(t, in.PoolResourceVersion, p.ResourceVersion, "Claim writes on the pool version the move was decided on")
			require.True(t, p.ExpectFrom, "Claim writes only while the class is on From")
			require.Equal(t, in.From, p.From, "Claim writes only while the class is on From")
			require.Equal(t, in.SpecConfigRef != nil, p.ExpectSpec, "Claim expects the spec the move was planned on")
			require.Equal(t, ptr.Deref(in.SpecConfigRef, ""), p.SpecConfigRef, "Claim expects the spec the move was planned on")
			require.Equal(t, in.FromRun != nil, p.ExpectRun, "Claim expects the run that last wrote the class when the move was planned")
			require.Equal(t, ptr.Deref(in.FromRun, ""), p.FromRun, "Claim expects the run that last wrote the class when the move was planned")
			if c.Result != nil {
				decode(t, c.Result, &claim)
			}
			claimed = claimResult(c) == claimStands
			moved = claimResult(c) == claimLanded
		case "Confirm", "RollBack":
			p := stepInput[activities.SettleInput](t, c, r)
			require.Equal(t, in.Pool, p.Pool)
			require.Equal(t, in.Class, p.Class)
			require.Equal(t, in.To, p.Config)
			require.Equal(t, claimed, p.Claimed, "%s knows whether the claim stands", c.Type)
			if claimed {
				require.Equal(t, claim.ResourceVersion, p.ResourceVersion, "%s writes on the claim's resourceVersion", c.Type)
			} else {
				// A roll back with no claim writes only on the class as
				// planned, and proves a lost confirm from the plan's version.
				require.Equal(t, in.PoolResourceVersion, p.ResourceVersion, "%s with no claim writes on the plan's resourceVersion", c.Type)
				require.Equal(t, in.From, p.From, "%s with no claim writes only while the class is on From", c.Type)
				require.Equal(t, in.FromRun != nil, p.ExpectRun, "%s with no claim expects the run the plan saw", c.Type)
				require.Equal(t, ptr.Deref(in.FromRun, ""), p.FromRun, "%s with no claim expects the run the plan saw", c.Type)
			}
			var w activities.PoolWrite
			if c.Result != nil {
				decode(t, c.Result, &w)
			}
			switch w.Outcome {
			case activities.Written:
				moved = c.Type == "Confirm"
			case activities.Landed, activities.LandedThenGone:
				moved = true
			}
		case "RecordEvent":
			ev := stepInput[events.PoolEvent](t, c, r)
			require.Equal(t, in.Pool, ev.Pool, "the event regards the pool")
			if moved {
				require.Equal(t, corev1.EventTypeNormal, ev.Type, "the event of a confirm")
				require.Equal(t, v1alpha1.EventReasonSandboxConfigSwitched, ev.Reason, "the event of a confirm")
				require.Equal(t, "switch/"+exec.RunID, ev.Key, "the event of a confirm is keyed by the switch's run")
			} else {
				require.Equal(t, corev1.EventTypeWarning, ev.Type, "the event of a roll back")
				require.NotEqual(t, v1alpha1.EventReasonSandboxConfigSwitched, ev.Reason, "the event of a roll back")
			}
		case "WakeReleases":
			wake := stepInput[activities.WakeInput](t, c, r)
			require.Equal(t, in.Pool, wake.Pool, "WakeReleases waits for the switch's own pool")
			woken := wake.Configs
			if in.To == "" {
				require.Equal(t, []string{in.Abandon}, woken, "a cleared claim's config is woken")
			}
			if in.FromDeleting && outcome == wfapi.OutcomeConfirmed {
				require.Contains(t, woken, in.From, "a switch off a config in deletion wakes its release")
			}
			if claim.Displaced != "" {
				require.Contains(t, woken, claim.Displaced, "the claim a switch displaced is woken")
			}
		case "AbandonClaim":
			p := stepInput[activities.ClaimInput](t, c, r)
			require.Equal(t, in.Pool, p.Pool, "AbandonClaim clears the pool's claim")
			require.Equal(t, in.Class, p.Class, "AbandonClaim clears the class's claim")
			require.Equal(t, in.Abandon, p.Config, "AbandonClaim clears the stale claim")
		}
	}
}

// releaseLook is the order of one look of a release; a look ends early when
// it has its answer.
var releaseLook = []string{"ReadConfig", "CachedUsers", "Unprotect"}

// looks splits a release's activities into looks, each starting with the
// live read.
func looks(t testing.TB, calls []*call) [][]*call {
	t.Helper()
	var out [][]*call
	for _, c := range calls {
		if c.Type == releaseLook[0] {
			out = append(out, nil)
		}
		require.NotEmpty(t, out, "a release starts with ReadConfig, not %s", c.Type)
		out[len(out)-1] = append(out[len(out)-1], c)
	}
	return out
}

// checkRelease: each look is ReadConfig (live read), CachedUsers (cache
// check), Unprotect (the live list, then the finalizer removal), in that
// order, of the release's config; a look that stopped before Unprotect
// without ending the workflow found a user.
func checkRelease(t testing.TB, h *historypb.History) {
	t.Helper()
	var in wfapi.ReleaseInput
	startInput(t, h, &in)
	ls := looks(t, activityCalls(t, h))
	for i, look := range ls {
		got := callTypes(look)
		require.Truef(t, len(got) <= len(releaseLook) && slices.Equal(got, releaseLook[:len(got)]), "look %d scheduled %v, not a prefix of %v", i+1, got, releaseLook)
		var live *resolve.Config
		decode(t, look[0].Result, &live)
		for _, c := range look {
			name := ""
			if c.Type == "Unprotect" {
				// The incarnation the look's live read saw.
				var un activities.UnprotectInput
				decode(t, c.Input, &un)
				name = un.Config
				require.NotNilf(t, live, "look %d unprotects a config its live read did not find", i+1)
				require.Equalf(t, live.UID, un.UID, "look %d unprotects the incarnation its live read saw", i+1)
				require.Equalf(t, live.ResourceVersion, un.ResourceVersion, "look %d unprotects the version its live read saw", i+1)
			} else {
				decode(t, c.Input, &name)
			}
			require.Equal(t, in.Config, name, "%s of look %d", c.Type, i+1)
		}
		last := look[len(look)-1]
		if i == len(ls)-1 && (isOpen(h) || last.Type == "Unprotect" || last.Type == "ReadConfig") {
			continue // still looking, or the look that ended the workflow
		}
		if last.Type == "Unprotect" {
			var removed activities.UnprotectResult
			decode(t, last.Result, &removed)
			require.Containsf(t, []string{activities.ReleaseConflict, activities.ReleaseInUse}, removed.Result,
				"look %d removed the finalizer and looked again", i+1)
			continue
		}
		require.Equalf(t, "CachedUsers", last.Type, "look %d stopped after %s", i+1, last.Type)
		var users activities.Users
		decode(t, last.Result, &users)
		require.NotZerof(t, users.Count, "look %d stopped after %s, which found no pool", i+1, last.Type)
	}
	if !isOpen(h) && lastEvent(h).GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		var outcome string
		result(t, h, &outcome)
		if outcome == wfapi.OutcomeReleased {
			last := ls[len(ls)-1]
			var live *resolve.Config
			decode(t, last[0].Result, &live)
			if live != nil {
				require.Equal(t, releaseLook, callTypes(last), "a release that removed the finalizer took the whole look")
			}
		}
	}
}

// checkMove checks a completed switch's steps and outcome, and, with
// signal set, that it was started by an operator's signal-with-start of
// that signal (no input); it returns the switch's input.
func checkMove(t testing.TB, h *historypb.History, signal, outcome string, steps ...string) wfapi.SwitchInput {
	t.Helper()
	var in wfapi.SwitchInput
	startInput(t, h, &in)
	if signal != "" {
		require.Equal(t, wfapi.SwitchInput{}, in, "an operator's start carries no input")
		require.Equal(t, []string{signal}, signals(h), "started by signal-with-start")
	}
	var res wfapi.SwitchResult
	result(t, h, &res)
	require.Equal(t, outcome, res.Outcome)
	require.Equal(t, steps, callTypes(activityCalls(t, h)))
	return in
}

// scenarioChecks check what each recorded scenario did, by fixture name
// without version.
var scenarioChecks = map[string]func(testing.TB, *historypb.History){
	"operator-requests": checkOperatorRequests,
	// Three steps, each with its gate, the first two with a bake: created
	// paused, resumed from the spec.
	"rollout-completed": func(t testing.TB, h *historypb.History) {
		require.Equal(t, []int32{1, 2, 3}, admittedSteps(t, h))
		require.Len(t, children(h), 3, "a gate per step")
		require.Equal(t, 2, countEvents(h, enumspb.EVENT_TYPE_TIMER_FIRED), "a bake after the first two steps")
		if plannedRollout(h) {
			require.Contains(t, signals(h), wfapi.SignalRecheck, "looked at again when spec.rollout.paused changed")
		} else {
			require.Equal(t, []string{wfapi.SignalResume}, signals(h), "resumed by the starter, from spec.rollout.paused")
		}
		var res wfapi.RolloutResult
		result(t, h, &res)
		require.Equal(t, string(v1alpha1.RolloutCompleted), res.Phase)
	},
	// Halted at its first step (the canary not Available by the deadline),
	// exported while it waits for a resume.
	"rollout-halted": func(t testing.TB, h *historypb.History) {
		require.True(t, isOpen(h), "exported while halted")
		require.Equal(t, []int32{1}, admittedSteps(t, h))
		// The Warning right after the halted wait (a planner's rollout
		// may look meanwhile).
		types := slices.DeleteFunc(callTypes(activityCalls(t, h)), func(c string) bool {
			return plannedRollout(h) && c == "LookAtRollout"
		})
		wait := slices.Index(types, "WaitRolloutStep")
		require.Positive(t, wait)
		require.Equal(t, "RecordRolloutEvent", types[wait+1], "the Warning right after the halted wait")
	},
	// The same, resumed (v1: by toggling paused; v2: by the resume
	// annotation, which the starter passes on as a recheck): the step is
	// taken again.
	"rollout-resumed": func(t testing.TB, h *historypb.History) {
		require.Equal(t, []int32{1, 1, 2}, admittedSteps(t, h))
		if plannedRollout(h) {
			sigs := signals(h)
			require.Equal(t, wfapi.SignalRecheck, sigs[len(sigs)-1], "resumed by a recheck of the resume request")
		} else {
			require.Equal(t, []string{wfapi.SignalPause, wfapi.SignalResume}, signals(h))
		}
	},
	// Driven by request annotations (v3): step 1 promoted from its
	// approval wait, step 2 aborted while baking and retried, then a
	// promote --full takes step 3 with every pool; an event for each.
	"rollout-driven": func(t testing.TB, h *historypb.History) {
		require.Equal(t, []int32{1, 2, 2, 3}, admittedSteps(t, h))
		require.Equal(t, 2, countEvents(h, enumspb.EVENT_TYPE_TIMER_STARTED), "step 2's bake, started twice")
		require.Zero(t, countEvents(h, enumspb.EVENT_TYPE_TIMER_FIRED), "no bake ran out: promoted, aborted, promoted fully")
		events := slices.DeleteFunc(callTypes(activityCalls(t, h)), func(c string) bool { return c != "RecordRolloutEvent" })
		require.Len(t, events, 7, "promoted, step 1 done, aborted, resumed, promoted fully, step 3 done, completed")
		var res wfapi.RolloutResult
		result(t, h, &res)
		require.Equal(t, string(v1alpha1.RolloutCompleted), res.Phase)
	},
	// Judged by its analysis (v4): step 1's canary fails its metric while
	// it bakes: the rollout rolls back (RolledBack, the canary's admission
	// withdrawn, a Warning); retried once the metric recovered, step 1 is
	// taken again, its analysis concludes Successful at a promote, and the
	// last step completes.
	"rollout-rolled-back": func(t testing.TB, h *historypb.History) {
		require.True(t, hasVersionMarker(h, "rollout-analysis"), "the analysis' change marker")
		require.Equal(t, []int32{1, 1, 2}, admittedSteps(t, h))
		calls := activityCalls(t, h)
		var failed, rolledBack bool
		for _, c := range calls {
			switch c.Type {
			case "MeasureRollout":
				var round []rollout.Measurement
				decode(t, c.Result, &round)
				failed = failed || len(round) == 1 && round[0].Phase == v1alpha1.MeasurementFailed
			case "RecordRolloutEvent":
				var ev activities.RolloutEventInput
				decode(t, c.Input, &ev)
				rolledBack = rolledBack || ev.Reason == v1alpha1.EventReasonRolloutRolledBack
			}
		}
		require.True(t, failed, "a round out of bounds")
		require.True(t, rolledBack, "the RolloutRolledBack Warning")
		var res wfapi.RolloutResult
		result(t, h, &res)
		require.Equal(t, string(v1alpha1.RolloutCompleted), res.Phase)
	},
	// Waiting for another cluster (v4's afterChange, recorded at v5): step 1
	// holds on AwaitingClusters while staging's rollout runs (a look reads
	// it Baking, its plan query's answer), and is admitted once a look read
	// it completed; the one step completes.
	"rollout-awaited-clusters": func(t testing.TB, h *historypb.History) {
		require.True(t, hasVersionMarker(h, "rollout-after"), "the wait's change marker")
		require.Equal(t, []int32{1}, admittedSteps(t, h))
		var awaits int
		var sawBaking, sawCompleted bool
		for _, c := range activityCalls(t, h) {
			switch c.Type {
			case "AwaitClusters":
				awaits++
			case "LookAtRollout":
				var look activities.RolloutLook
				decode(t, c.Result, &look)
				for _, r := range look.After {
					require.Equal(t, "staging", r.Cluster)
					sawBaking = sawBaking || r.Workflow == rollout.WorkflowRunning && r.Phase == v1alpha1.RolloutBaking
					sawCompleted = sawCompleted || r.Completed()
				}
			}
		}
		require.Positive(t, awaits, "an AwaitClusters while staging's rollout ran")
		require.True(t, sawBaking, "a look read staging's rollout running, Baking")
		require.True(t, sawCompleted, "a look read staging's rollout completed")
		var res wfapi.RolloutResult
		result(t, h, &res)
		require.Equal(t, string(v1alpha1.RolloutCompleted), res.Phase)
	},
	// An operator's re-resolution held in its Observe, a regular activity:
	// the one point where a switch rests between workflow tasks (a
	// move's steps all run inside one task).
	"switch-open-at-observe": func(t testing.TB, h *historypb.History) {
		require.True(t, isOpen(h), "exported while running")
		var in wfapi.SwitchInput
		startInput(t, h, &in)
		require.Equal(t, wfapi.SwitchInput{}, in, "an operator's start carries no input")
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Observe"}, callTypes(calls))
		require.False(t, calls[0].Local, "the Observe is regular")
		require.Zero(t, calls[0].Closed, "the Observe's completion is held")
		require.Len(t, workflowTasksCompleted(h), 1, "at rest after its first workflow task")
	},
	// A pool's first resolution: no config before.
	"switch-first-resolution": func(t testing.TB, h *historypb.History) {
		in := checkMove(t, h, "", wfapi.OutcomeConfirmed, "Protect", "Claim", "Confirm", "RecordEvent")
		require.Empty(t, in.From, "the first resolution")
	},
	// The target was deleted, released and created again under the same
	// name between the protection and the claim: the claim refused it,
	// unprotected, and the switch rolled back with nothing claimed.
	"switch-claim-refused": func(t testing.TB, h *historypb.History) {
		checkMove(t, h, "", wfapi.OutcomeRolledBack, "Protect", "Claim", "RollBack", "RecordEvent")
		var claim activities.PoolWrite
		decode(t, activityCalls(t, h)[1].Result, &claim)
		require.Equal(t, activities.Refused, claim.Outcome, "the claim refused its target")
		require.Equal(t, v1alpha1.ReasonSandboxConfigNotProtected, claim.Refusal.Reason, "unprotected")
	},
	// A claim left by a switch stopped by hand, cleared once the pool
	// needs no move.
	"switch-abandoned-claim": func(t testing.TB, h *historypb.History) {
		in := checkMove(t, h, "", wfapi.OutcomeRolledBack, "AbandonClaim", "WakeReleases")
		require.Empty(t, in.To)
		require.NotEmpty(t, in.Abandon)
	},
	// An operator's re-resolution of a pool that needs nothing.
	"switch-reresolve-up-to-date": func(t testing.TB, h *historypb.History) {
		checkMove(t, h, wfapi.SignalReresolve, wfapi.OutcomeUpToDate, "Observe")
	},
	// An operator's re-resolution, with the starter stopped, of a pool whose
	// class default changed: it makes the move itself.
	"switch-reresolve-moved": func(t testing.TB, h *historypb.History) {
		checkMove(t, h, wfapi.SignalReresolve, wfapi.OutcomeConfirmed, "Observe", "Protect", "Claim", "Confirm", "RecordEvent")
		require.Empty(t, h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(),
			"started from the CLI with no input at all")
	},
	// A re-resolution asked for while a switch ran, inside its one workflow
	// task: the server refused that task's completion (a new event came,
	// and its commands ended the workflow). The re-run found the signal
	// before its first Protect ended; its Claim only looked, found the
	// refused task's confirm (the class on the target, stamped by the
	// run), so the move stands: its event (the same, keyed by the run),
	// its Outcome, then continued as new with no input for the look.
	"switch-continued-as-new": func(t testing.TB, h *historypb.History) {
		var in wfapi.SwitchInput
		startInput(t, h, &in)
		require.True(t, in.IsMove(), "started by the starter, with its move")
		require.Contains(t, signals(h), wfapi.SignalReresolve, "asked to look again while it ran")
		require.Equal(t, []enumspb.WorkflowTaskFailedCause{enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND}, failedWorkflowTasks(h),
			"the workflow task the signal came during was refused")
		last := lastEvent(h)
		require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, last.GetEventType())
		outcome, upserted := upsertedOutcome(t, h)
		require.True(t, upserted, "the move the refused task made is reported")
		require.Equal(t, wfapi.OutcomeConfirmed, outcome)
		require.Equal(t, []string{"Protect", "Claim", "RecordEvent"}, callTypes(activityCalls(t, h)), "the Claim found the run's confirm: the event is due, nothing else")
		var next wfapi.SwitchInput
		decode(t, last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput(), &next)
		require.Equal(t, wfapi.SwitchInput{}, next, "the look asked for plans from its own live read")
	},
	// A switch whose workflow task ran again after its Confirm landed: the
	// re-run's Claim found the class on the target with its run's stamp.
	"switch-rerun-landed": func(t testing.TB, h *historypb.History) {
		checkMove(t, h, "", wfapi.OutcomeConfirmed, "Protect", "Claim", "RecordEvent")
		require.Len(t, failedWorkflowTasks(h), 1, "the first run of the task was refused")
		var claim activities.PoolWrite
		decode(t, activityCalls(t, h)[1].Result, &claim)
		require.Equal(t, activities.Landed, claim.Outcome, "the re-run's claim found the confirm")
	},
	// A switch whose workflow task ran again after its RollBack landed (the
	// target since released and created again, so the re-run's Protect
	// protected it): the re-run's Claim found the roll back.
	"switch-rerun-rolled-back": func(t testing.TB, h *historypb.History) {
		checkMove(t, h, "", wfapi.OutcomeRolledBack, "Protect", "Claim", "RecordEvent")
		require.Len(t, failedWorkflowTasks(h), 1, "the first run of the task was refused")
		var claim activities.PoolWrite
		decode(t, activityCalls(t, h)[1].Result, &claim)
		require.Equal(t, activities.RolledBack, claim.Outcome, "the re-run's claim found the roll back")
		require.NotEmpty(t, claim.Earlier.Reason, "the failure still stands: its Warning is due")
	},
	// The run it continued as: a look that finds the pool up to date.
	"switch-after-continue-as-new": func(t testing.TB, h *historypb.History) {
		started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
		require.NotEmpty(t, started.GetContinuedExecutionRunId(), "a run started by continue-as-new")
		checkMove(t, h, "", wfapi.OutcomeUpToDate, "Observe")
	},
	"switch-confirmed": func(t testing.TB, h *historypb.History) {
		var res wfapi.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
	},
	// A switch off a config in deletion wakes that config's release.
	"switch-confirmed-from-deleting": func(t testing.TB, h *historypb.History) {
		var in wfapi.SwitchInput
		startInput(t, h, &in)
		require.True(t, in.FromDeleting)
		var res wfapi.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim", "Confirm", "RecordEvent", "WakeReleases"}, callTypes(calls))
		if !calls[4].Local { // a local activity's input is not recorded
			var woken []string
			decode(t, calls[4].Input, &woken)
			require.Contains(t, woken, in.From)
		}
	},
	// The target was deleted between the claim and Confirm's live read.
	"switch-rolled-back": func(t testing.TB, h *historypb.History) {
		var res wfapi.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeRolledBack, res.Outcome)
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim", "Confirm", "RollBack", "RecordEvent"}, callTypes(calls))
		require.Contains(t, []string{v1alpha1.ReasonSandboxConfigDeleting, v1alpha1.ReasonSandboxConfigNotFound}, refusedFor(calls[2]),
			"Confirm's live read saw the deletion")
	},
	"release-at-once": func(t testing.TB, h *historypb.History) {
		var outcome string
		result(t, h, &outcome)
		require.Equal(t, wfapi.OutcomeReleased, outcome)
		ls := looks(t, activityCalls(t, h))
		require.Len(t, ls, 1, "one look")
		require.Equal(t, releaseLook, callTypes(ls[0]))
	},
	"release-waited": func(t testing.TB, h *historypb.History) {
		var outcome string
		result(t, h, &outcome)
		require.Equal(t, wfapi.OutcomeReleased, outcome)
		ls := looks(t, activityCalls(t, h))
		require.GreaterOrEqual(t, len(ls), 2, "it waited at least once")
		require.Equal(t, releaseLook, callTypes(ls[len(ls)-1]), "and then released")
		waits := 0
		for _, e := range h.GetEvents() {
			if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				waits++
			}
		}
		require.GreaterOrEqual(t, waits, len(ls)-1, "it waited (signal or fallback timer) between looks")
	},
}

// failedWorkflowTasks are the causes of the history's failed workflow
// tasks, in order: a task whose completion the server refused, run again.
func failedWorkflowTasks(h *historypb.History) []enumspb.WorkflowTaskFailedCause {
	var causes []enumspb.WorkflowTaskFailedCause
	for _, e := range h.GetEvents() {
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil {
			causes = append(causes, a.GetCause())
		}
	}
	return causes
}
