package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// TestOrdering reads every fixture and checks, from the events alone, that
// the recorded run did its steps in the order the design requires: a pool's
// switches one at a time, a switch's activities in their order, a release's
// looks in theirs. The same checks run in the recorder before it writes a
// fixture, so a fixture of a run that went wrong is never committed.
func TestOrdering(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, fx := range fixtures {
		t.Run(fmt.Sprintf("%s.v%d", fx.Name(), fx.Version), func(t *testing.T) {
			h, err := ReadHistory(fx.Path)
			require.NoError(t, err)
			checkFixture(t, fx, h)
		})
	}
}

// TestScenariosRecorded: the scenarios the issue asks for exist, in some
// version, and at least one history was exported while its workflow was
// still running, as a new worker replays it.
func TestScenariosRecorded(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	have := map[string]bool{}
	open := 0
	for _, fx := range fixtures {
		have[fx.Name()] = true
		h, err := ReadHistory(fx.Path)
		require.NoError(t, err)
		if isOpen(h) {
			open++
		}
	}
	for _, name := range []string{
		"pool-walk", "pool-continued-as-new", "pool-after-continue-as-new", "pool-open-mid-switch",
		"switch-confirmed", "switch-confirmed-from-deleting", "switch-rolled-back", "switch-open-at-read", "switch-open-at-claim",
		"release-at-once", "release-waited",
	} {
		require.True(t, have[name], "no fixture of scenario %s in %s", name, Dir)
	}
	require.GreaterOrEqual(t, open, 2, "histories exported while running")
}

// checkFixture checks a history against what its workflow must do, and
// against what its scenario did.
func checkFixture(t testing.TB, fx Fixture, h *historypb.History) {
	t.Helper()
	require.NoError(t, checkWorkflowType(fx, h))
	checkOneAtATime(t, h)
	switch fx.Kind {
	case "pool":
		checkPool(t, h)
	case "switch":
		checkSwitch(t, h)
	case "release":
		checkRelease(t, h)
	}
	if check, ok := scenarioChecks[fx.Name()]; ok {
		check(t, h)
	}
}

// checkOneAtATime: none of the three workflows does two things at once. Each
// activity and each child workflow is started only after the one before it
// ended. For a pool, that is "no switch starts before the previous one
// completed" and more: no status write or Deployment apply runs beside a
// switch either.
func checkOneAtATime(t testing.TB, h *historypb.History) {
	t.Helper()
	type step struct {
		what          string
		start, closed int64
	}
	var steps []step
	for _, c := range activityCalls(t, h) {
		steps = append(steps, step{"activity " + c.Type, c.Scheduled, c.Closed})
	}
	for _, c := range children(h) {
		steps = append(steps, step{"child " + c.ID, c.Initiated, c.Closed})
	}
	slices.SortFunc(steps, func(a, b step) int { return int(a.start - b.start) })
	for i := 1; i < len(steps); i++ {
		prev, cur := steps[i-1], steps[i]
		require.Truef(t, prev.closed != 0 && prev.closed < cur.start,
			"%s (event %d) started before %s (event %d) ended (event %d)", cur.what, cur.start, prev.what, prev.start, prev.closed)
	}
}

// checkPool: a pool's children are its switches, numbered on from the count
// the run started with, each for this pool.
func checkPool(t testing.TB, h *historypb.History) {
	t.Helper()
	var in wfapi.PoolInput
	startInput(t, h, &in)
	n := 0
	if in.State != nil {
		n = in.State.Switches
	}
	for _, c := range children(h) {
		n++
		require.Equal(t, wfapi.SwitchWorkflow, c.Type)
		require.Equal(t, wfapi.SwitchWorkflowID(in.Namespace, in.Name, n), c.ID)
		var sw workflows.SwitchInput
		decode(t, c.Input, &sw)
		require.Equal(t, in.Namespace, sw.Pool.Namespace)
		require.Equal(t, in.Name, sw.Pool.Name)
		require.NotEmpty(t, sw.To)
		require.NotEqual(t, sw.From, sw.To, "a switch moves the class")
	}
	for _, c := range activityCalls(t, h) {
		if c.Local {
			require.Equal(t, "Observe", c.Type, "a pool's only local activity")
			continue
		}
		require.Contains(t, []string{"ApplyDeployment", "SyncStatus", "RecordEvent", "WakeReleases"}, c.Type,
			"a pool's activities besides Observe")
	}
}

// The switch's activities, in order, by outcome. A history is one of these
// or, while the switch runs or when the pool went away, a prefix of one.
var switchOrders = map[string][][]string{
	wfapi.OutcomeConfirmed: {
		{"Protect", "Claim", "ReadConfig", "Confirm", "RecordEvent", "WakeReleases"},
		// the live read found the target recreated, unprotected: protected again
		{"Protect", "Claim", "ReadConfig", "Protect", "Confirm", "RecordEvent", "WakeReleases"},
	},
	wfapi.OutcomeRolledBack: {
		{"Protect", "Claim", "ReadConfig", "RollBack", "RecordEvent", "WakeReleases"},
		// the finalizer was refused: nothing was claimed
		{"Protect", "RollBack", "RecordEvent", "WakeReleases"},
	},
}

// localSteps are the switch's steps that run as local activities in a
// switch that took the "local-steps" change: all but the pool writes (Claim,
// Confirm, RollBack). In one recorded before it, every step is a regular
// activity.
var localSteps = []string{"Protect", "ReadConfig", "RecordEvent", "WakeReleases"}

// changeVersion is the version a workflow took at a workflow.GetVersion
// change, from its Version marker; DefaultVersion when the history has none
// (recorded before the change, or not there yet).
func changeVersion(t testing.TB, h *historypb.History, changeID string) workflow.Version {
	t.Helper()
	for _, e := range h.GetEvents() {
		a := e.GetMarkerRecordedEventAttributes()
		if e.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || a.GetMarkerName() != "Version" {
			continue
		}
		var id string
		decode(t, a.GetDetails()["change-id"], &id)
		if id == changeID {
			var v workflow.Version
			decode(t, a.GetDetails()["version"], &v)
			return v
		}
	}
	return workflow.DefaultVersion
}

// localSwitch reports whether a switch's history is of the shape with local
// steps.
func localSwitch(t testing.TB, h *historypb.History) bool {
	t.Helper()
	return changeVersion(t, h, "local-steps") >= 1
}

// checkSwitch: Protect (finalizer), Claim, ReadConfig (live read), Confirm or
// RollBack, RecordEvent, each once, in that order, each of the target; each
// a local or a regular activity as the switch's version says. Local
// activities' inputs are not in the history: only the regular ones' are
// checked.
func checkSwitch(t testing.TB, h *historypb.History) {
	t.Helper()
	var in workflows.SwitchInput
	startInput(t, h, &in)
	calls := activityCalls(t, h)
	got := callTypes(calls)
	lean := localSwitch(t, h)
	for _, c := range calls {
		require.Equalf(t, lean && slices.Contains(localSteps, c.Type), c.Local,
			"%s (event %d) is local: %v; the switch has local steps: %v", c.Type, c.Scheduled, c.Local, lean)
	}

	matches := func(orders [][]string, complete bool) bool {
		for _, order := range orders {
			// RecordEvent is the last required step; WakeReleases is
			// optional.
			required := slices.Index(order, "RecordEvent") + 1
			if len(got) <= len(order) && slices.Equal(got, order[:len(got)]) && (!complete || len(got) >= required) {
				return true
			}
		}
		return false
	}
	all := append(slices.Clone(switchOrders[wfapi.OutcomeConfirmed]), switchOrders[wfapi.OutcomeRolledBack]...)
	if isOpen(h) {
		require.Truef(t, matches(all, false), "a running switch's activities %v are not a prefix of %v", got, all)
	} else {
		var res workflows.SwitchResult
		result(t, h, &res)
		switch res.Outcome {
		case wfapi.OutcomePoolGone:
			require.Truef(t, matches(all, false), "activities %v of a switch whose pool went away are not a prefix of %v", got, all)
		case wfapi.OutcomeConfirmed, wfapi.OutcomeRolledBack:
			require.Truef(t, matches(switchOrders[res.Outcome], true), "a %s switch scheduled %v, not one of %v", res.Outcome, got, switchOrders[res.Outcome])
		default:
			t.Fatalf("unknown switch outcome %q", res.Outcome)
		}
	}

	for _, c := range calls {
		if c.Local {
			continue
		}
		switch c.Type {
		case "Protect":
			var p activities.ProtectInput
			decode(t, c.Input, &p)
			require.Equal(t, activities.ProtectInput{Config: in.To, Class: in.Class}, p, "Protect protects the target")
		case "Claim":
			var p activities.ClaimInput
			decode(t, c.Input, &p)
			require.Equal(t, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.To, ResourceVersion: in.PoolResourceVersion}, p,
				"Claim claims the target, on the pool version the pass observed")
		case "ReadConfig":
			var name string
			decode(t, c.Input, &name)
			require.Equal(t, in.To, name, "ReadConfig reads the target")
		case "Confirm", "RollBack":
			var p activities.SettleInput
			decode(t, c.Input, &p)
			require.Equal(t, in.Pool, p.Pool)
			require.Equal(t, in.To, p.Config)
		case "RecordEvent":
			var ev activities.EventInput
			decode(t, c.Input, &ev)
			require.Equal(t, in.Pool, ev.Pool)
			want := corev1.EventTypeNormal
			if slices.Contains(got, "RollBack") {
				want = corev1.EventTypeWarning
			}
			require.Equal(t, want, ev.Type, "the event reports the write before it")
		}
	}
}

// releaseLook is the order of one look of a release; a look ends early when
// it has its answer.
var releaseLook = []string{"ReadConfig", "CachedUsers", "LiveUsers", "Unprotect"}

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
// check), LiveUsers (live list), Unprotect (finalizer removal), in that
// order, of the release's config; a look that stopped before Unprotect
// without ending the workflow found a user.
func checkRelease(t testing.TB, h *historypb.History) {
	t.Helper()
	var in wfapi.ReleaseInput
	startInput(t, h, &in)
	ls := looks(t, activityCalls(t, h))
	for i, look := range ls {
		got := callTypes(look)
		require.Truef(t, slices.Equal(got, releaseLook[:len(got)]), "look %d scheduled %v, not a prefix of %v", i+1, got, releaseLook)
		for _, c := range look {
			var name string
			decode(t, c.Input, &name)
			require.Equal(t, in.Config, name, "%s of look %d", c.Type, i+1)
		}
		last := look[len(look)-1]
		if i == len(ls)-1 && (isOpen(h) || last.Type == "Unprotect" || last.Type == "ReadConfig") {
			continue // still looking, or the look that ended the workflow
		}
		if last.Type == "Unprotect" {
			var removed string
			decode(t, last.Result, &removed)
			require.Equalf(t, activities.ReleaseConflict, removed, "look %d removed the finalizer and looked again", i+1)
			continue
		}
		require.Containsf(t, []string{"CachedUsers", "LiveUsers"}, last.Type, "look %d stopped after %s", i+1, last.Type)
		var users []string
		decode(t, last.Result, &users)
		require.NotEmptyf(t, users, "look %d stopped after %s, which found no pool", i+1, last.Type)
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

// scenarioChecks check what each recorded scenario did, by fixture name
// without version.
var scenarioChecks = map[string]func(testing.TB, *historypb.History){
	// Spec 001's walk: five switches, to the class default each time.
	"pool-walk": func(t testing.TB, h *historypb.History) {
		cs := children(h)
		var from, to []string
		for _, c := range cs {
			var sw workflows.SwitchInput
			decode(t, c.Input, &sw)
			from, to = append(from, sw.From), append(to, sw.To)
			require.Equal(t, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, c.CloseType, "switch %s completed", c.ID)
			var res workflows.SwitchResult
			decode(t, c.Result, &res)
			require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome, "switch %s", c.ID)
		}
		require.Equal(t, []string{"gvisor-default", "gvisor-default-v2", "gvisor-default", "gvisor-default-v2", "gvisor-default"}, to,
			"the walk's switch targets, in order")
		require.Equal(t, []string{"", "gvisor-default", "gvisor-default-v2", "gvisor-default", "gvisor-default-v2"}, from)
		require.Empty(t, h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(), "one run")
	},
	// The run the server told to continue as new, and the run after it.
	"pool-continued-as-new": func(t testing.TB, h *historypb.History) {
		last := lastEvent(h)
		require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, last.GetEventType())
		suggested := false
		for _, e := range h.GetEvents() {
			suggested = suggested || e.GetWorkflowTaskStartedEventAttributes().GetSuggestContinueAsNew()
		}
		require.True(t, suggested, "the server suggested continuing as new")
		var next wfapi.PoolInput
		decode(t, last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput(), &next)
		require.NotNil(t, next.State, "the pool's state is carried over")
		require.Equal(t, len(children(h)), next.State.Switches, "the switch count is carried over")
		require.Greater(t, next.State.Switches, 0)
	},
	"pool-after-continue-as-new": func(t testing.TB, h *historypb.History) {
		started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
		require.NotEmpty(t, started.GetContinuedExecutionRunId(), "a run started by continue-as-new")
		var in wfapi.PoolInput
		startInput(t, h, &in)
		require.NotNil(t, in.State)
		require.Greater(t, in.State.Switches, 0)
		require.True(t, isOpen(h), "exported while running")
	},
	// A pool waiting for its switch, which is held between its claim and
	// its live read.
	"pool-open-mid-switch": func(t testing.TB, h *historypb.History) {
		require.True(t, isOpen(h), "exported while running")
		cs := children(h)
		require.NotEmpty(t, cs)
		last := cs[len(cs)-1]
		require.NotZero(t, last.Started, "the switch started")
		require.Zero(t, last.Closed, "the switch is still running")
	},
	// A switch held at its live read, after the claim (v1).
	"switch-open-at-read": func(t testing.TB, h *historypb.History) {
		require.True(t, isOpen(h), "exported while running")
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim", "ReadConfig"}, callTypes(calls))
		require.Zero(t, calls[2].Closed, "the live read is held")
	},
	// A switch held once its claim's write landed, before the claim's
	// completion reached it, so before its live read (v2, where the read is
	// a local activity, which leaves nothing in the history until it ends).
	"switch-open-at-claim": func(t testing.TB, h *historypb.History) {
		require.True(t, isOpen(h), "exported while running")
		require.True(t, localSwitch(t, h), "a switch with local steps")
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim"}, callTypes(calls))
		require.Zero(t, calls[1].Closed, "the claim's completion is held")
	},
	"switch-confirmed": func(t testing.TB, h *historypb.History) {
		var res workflows.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
	},
	// A switch off a config in deletion wakes that config's release.
	"switch-confirmed-from-deleting": func(t testing.TB, h *historypb.History) {
		var in workflows.SwitchInput
		startInput(t, h, &in)
		require.True(t, in.FromDeleting)
		var res workflows.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim", "ReadConfig", "Confirm", "RecordEvent", "WakeReleases"}, callTypes(calls))
		if !calls[5].Local { // a local activity's input is not recorded
			var woken []string
			decode(t, calls[5].Input, &woken)
			require.Contains(t, woken, in.From)
		}
	},
	// The target was deleted between the claim and the live read.
	"switch-rolled-back": func(t testing.TB, h *historypb.History) {
		var res workflows.SwitchResult
		result(t, h, &res)
		require.Equal(t, wfapi.OutcomeRolledBack, res.Outcome)
		calls := activityCalls(t, h)
		require.Equal(t, []string{"Protect", "Claim", "ReadConfig", "RollBack", "RecordEvent"}, callTypes(calls))
		var live *resolve.Config
		decode(t, calls[2].Result, &live)
		require.True(t, live == nil || live.Deleting, "the live read saw the deletion")
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
