package replay

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolevents"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// TestReplayCatchesIncompatibleChanges proves the replay test can fail: the
// recorded histories, replayed against deliberately changed copies of the
// workflows registered under the production names, fail with a
// nondeterminism error. Were the replayer not to look at the commands, these
// would pass and TestReplay would prove nothing.
func TestReplayCatchesIncompatibleChanges(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		version       int
		workflow      string
		changed       any
	}{
		// A switch is replayed under the execution it was recorded from. A
		// v4 move runs in one workflow task, so no switch rests inside a
		// move: the switch cases replay completed fixtures, whose markers
		// the changed copy's commands must match. Not here: the running
		// switch-open-at-observe against a local Observe. It ends with its
		// first task's commands, which the replayer matches against the
		// events only once a later task starts; it passes (the completed
		// re-resolution catches the change, and so do the ordering checks).
		{"a switch that reads before it claims", "switch-confirmed", 4, wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a switch that rolls back after reading before it claims", "switch-rolled-back", 4, wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a switch that claims in a regular activity", "switch-confirmed", 4, wfapi.SwitchWorkflow, switchRegularClaim},
		{"a re-resolution that claims in a regular activity", "switch-reresolve-moved", 4, wfapi.SwitchWorkflow, switchRegularClaim},
		{"a switch that confirms without claiming", "switch-confirmed", 4, wfapi.SwitchWorkflow, switchConfirmWithoutClaim},
		{"a switch that rolls back without claiming", "switch-rolled-back", 4, wfapi.SwitchWorkflow, switchConfirmWithoutClaim},
		{"a re-resolution that observes in a local activity", "switch-reresolve-moved", 4, wfapi.SwitchWorkflow, switchLocalObserve},
		{"a re-run that goes on after its claim found its confirm", "switch-rerun-landed", 4, wfapi.SwitchWorkflow, switchIgnoresEarlierWrite},
		{"a re-run that goes on after its claim found its roll back", "switch-rerun-rolled-back", 4, wfapi.SwitchWorkflow, switchIgnoresEarlierWrite},
		{"a release that lists live before asking the cache", "release-at-once", 3, wfapi.ReleaseWorkflow, releaseLiveFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := fixtureAt(t, tc.fixture, tc.version)

			// The same fixture replays with the real code...
			r, err := NewReplayer()
			require.NoError(t, err)
			require.NoError(t, ReplayFixture(r, quiet, fx))

			// ...and fails with the changed one under the same name.
			r, err = newReplayer(func(reg workflows.Registry) {
				workflows.RegisterWorkflows(replacing{reg, map[string]any{tc.workflow: tc.changed}})
			})
			require.NoError(t, err)
			err = ReplayFixture(r, silent, fx)
			require.Error(t, err, "replaying %s against %s", fx.Path, tc.name)
			require.ErrorContains(t, err, "TMPRL1100", "a nondeterminism error")
			t.Logf("%s: %.300s", fx.Path, err)
		})
	}
}

// replacing registers a replacement under a production workflow name, and
// everything else as given.
type replacing struct {
	workflows.Registry
	by map[string]any
}

func (r replacing) RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions) {
	if changed, ok := r.by[options.Name]; ok {
		w = changed
	}
	r.Registry.RegisterWorkflowWithOptions(w, options)
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

// act names the activities, as in package workflows.
var act *activities.Activities

func guardOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
}

// releaseLiveFirst is Release with the live list (Unprotect's) before the
// cache check.
func releaseLiveFirst(ctx workflow.Context, in wfapi.ReleaseInput) (string, error) {
	ctx = guardOptions(ctx)
	var c *resolve.Config
	if err := workflow.ExecuteActivity(ctx, act.ReadConfig, in.Config).Get(ctx, &c); err != nil {
		return "", err
	}
	var removed activities.UnprotectResult
	if err := workflow.ExecuteActivity(ctx, act.Unprotect, activities.UnprotectInput{Config: in.Config}).Get(ctx, &removed); err != nil {
		return "", err
	}
	var users activities.Users
	if err := workflow.ExecuteActivity(ctx, act.CachedUsers, in.Config).Get(ctx, &users); err != nil {
		return "", err
	}
	return wfapi.OutcomeReleased, nil
}

func guardLocal(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second})
}

// guardSwitch is the switch as package workflows runs it (v4: every step of
// a move local, in one workflow task), written again here so that one thing
// at a time can be changed in it. Unchanged, it must replay every switch
// fixture of the version it was written for (the control case of
// TestGuardIsFaithful): a changed one that fails the replay then fails for
// its change, not for something the copy left out. It issues the commands
// of workflows.Switch, Version markers included; what issues none (queries,
// current details, logs, metrics) it leaves out.
type guardSwitch struct {
	readBeforeClaim bool // the live read before the claim
	regularClaim    bool // the claim a regular activity
	skipClaim       bool // no claim at all
	localObserve    bool // an operator's start observes in a local activity
	ignoreEarlier   bool // a re-run's claim that found its run's confirm or roll back goes on as a claim
}

// guardVersion is the fixture version guardSwitch copies.
const guardVersion = 4

var (
	switchReadBeforeClaim     = guardSwitch{readBeforeClaim: true}.run
	switchRegularClaim        = guardSwitch{regularClaim: true}.run
	switchConfirmWithoutClaim = guardSwitch{skipClaim: true}.run
	switchLocalObserve        = guardSwitch{localObserve: true}.run
	switchIgnoresEarlierWrite = guardSwitch{ignoreEarlier: true}.run
)

func (g guardSwitch) run(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	pool, err := wfapi.SwitchPool(id, in.Pool)
	if err != nil {
		return nil, err
	}
	in.Pool = pool
	if in.Problem() != "" {
		return nil, fmt.Errorf("switch refused: %s", in.Problem())
	}
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	if !in.IsMove() {
		drainSignals(reresolve)
	}
	if !in.IsMove() {
		attrs := append([]temporal.SearchAttributeUpdate{searchattr.WorkerPoolKey.ValueSet(in.Pool.String())}, guardCarriedMove(ctx)...)
		_ = workflow.UpsertTypedSearchAttributes(ctx, attrs...)
		observe := workflow.ExecuteActivity(guardOptions(ctx), act.Observe, in.Pool)
		if g.localObserve {
			observe = workflow.ExecuteLocalActivity(guardLocal(ctx), act.Observe, in.Pool)
		}
		var obs activities.Observation
		if err := observe.Get(ctx, &obs); err != nil {
			return nil, err
		}
		move, ok := obs.NextMove(in.Pool)
		if !ok {
			res := &wfapi.SwitchResult{Outcome: wfapi.OutcomeUpToDate}
			if !obs.Exists {
				res.Outcome = wfapi.OutcomePoolGone
			}
			return guardFinish(ctx, in, res, reresolve)
		}
		in = move
		_ = workflow.UpsertTypedSearchAttributes(ctx, wfapi.SwitchAttributes(in)...)
	}
	res, err := g.steps(ctx, in)
	if err != nil {
		return nil, err
	}
	return guardFinish(ctx, in, res, reresolve)
}

// guardCarriedMove is workflows.carriedMove: the unsetting of the move's
// search attributes a run continued as new carries over.
func guardCarriedMove(ctx workflow.Context) []temporal.SearchAttributeUpdate {
	sa := workflow.GetTypedSearchAttributes(ctx)
	var unset []temporal.SearchAttributeUpdate
	for _, k := range []temporal.SearchAttributeKeyKeyword{searchattr.SandboxClassKey, searchattr.FromConfigKey, searchattr.ToConfigKey, searchattr.OutcomeKey} {
		if sa.ContainsKey(k) {
			unset = append(unset, k.ValueUnset())
		}
	}
	return unset
}

func (g guardSwitch) steps(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	local := guardLocal(ctx)
	if in.To == "" {
		var w activities.PoolWrite
		if err := workflow.ExecuteLocalActivity(local, act.AbandonClaim, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.Abandon}).Get(ctx, &w); err != nil {
			return nil, err
		}
		if w.Outcome == activities.PoolGone {
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		}
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack}, guardWake(ctx, []string{in.Abandon})
	}
	// The first Protect, yielding to a `reresolve` that comes before it
	// ends (workflows.protectBeforeClaim).
	var check activities.TargetCheck
	pctx, cancel := workflow.WithCancel(local)
	defer cancel()
	f := workflow.ExecuteLocalActivity(pctx, act.Protect, activities.ProtectInput{Config: in.To, Class: in.Class, FromCache: true, Pool: in.Pool})
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	signalled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	sel.AddReceive(reresolve, func(workflow.ReceiveChannel, bool) { signalled = true })
	sel.Select(ctx)
	yielding := signalled
	if yielding {
		cancel()
	} else if err := f.Get(ctx, &check); err != nil {
		return nil, err
	}
	var release []string
	var claimed string
	if check.OK && g.readBeforeClaim {
		var live *resolve.Config
		if err := workflow.ExecuteLocalActivity(local, act.ReadConfig, in.To).Get(ctx, &live); err != nil {
			return nil, err
		}
	}
	var claim activities.PoolWrite
	if (check.OK || yielding) && !g.skipClaim {
		claimIn := guardClaimInput(in)
		claimIn.OnlyOwn = yielding
		f := workflow.ExecuteLocalActivity(local, act.Claim, claimIn)
		if g.regularClaim {
			f = workflow.ExecuteActivity(guardOptions(ctx), act.Claim, claimIn)
		}
		if err := f.Get(ctx, &claim); err != nil {
			return nil, err
		}
		if yielding {
			if claim.Outcome == activities.Unclaimed {
				drainSignals(reresolve)
				return nil, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, wfapi.SwitchInput{})
			}
			check.OK = true
		}
		switch {
		case claim.Outcome == activities.PoolGone:
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
		case claim.Outcome == activities.Superseded:
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded}, nil
		case (claim.Outcome == activities.Landed || claim.Outcome == activities.LandedThenGone) && !g.ignoreEarlier:
			res, err := guardSwitched(ctx, in, &claim)
			if err != nil || res.Outcome != wfapi.OutcomeConfirmed || !in.FromDeleting {
				return res, err
			}
			return res, guardWake(ctx, []string{in.From})
		case claim.Outcome == activities.RolledBack && !g.ignoreEarlier:
			earlier := claim.Earlier
			if earlier.Reason != "" && earlier.FailingSince != nil {
				ev := poolevents.FailureWarning(in.Pool, in.Class, earlier.Reason, earlier.Message, *earlier.FailingSince)
				if err := workflow.ExecuteLocalActivity(local, act.RecordEvent, ev).Get(ctx, nil); err != nil {
					return nil, err
				}
			}
			return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: earlier.Reason, Message: earlier.Message}, nil
		case claim.Outcome == activities.Refused:
			check = *claim.Refusal
		}
	}
	if check.OK {
		claimed = claim.ResourceVersion
		if claim.Displaced != "" {
			release = append(release, claim.Displaced)
		}
	}
	var res *wfapi.SwitchResult
	var err error
	if check.OK {
		res, err = guardConfirm(ctx, in, claimed)
		if in.FromDeleting {
			release = append(release, in.From)
		}
	} else {
		res, err = guardRollBack(ctx, in, check, claimed)
	}
	if err != nil || res.Outcome == wfapi.OutcomePoolGone {
		return res, err
	}
	if len(release) > 0 {
		if err := guardWake(ctx, release); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func guardConfirm(ctx workflow.Context, in wfapi.SwitchInput, claimed string) (*wfapi.SwitchResult, error) {
	settle := activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation, ResourceVersion: claimed, Claimed: true,
	}
	var w activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.Confirm, settle).Get(ctx, &w); err != nil {
		return nil, err
	}
	if w.Outcome == activities.Refused && w.Refusal.Reason == activities.ReasonSandboxConfigNotProtected {
		var check activities.TargetCheck
		if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.Protect, activities.ProtectInput{Config: in.To, Class: in.Class, Pool: in.Pool}).Get(ctx, &check); err != nil {
			return nil, err
		}
		if !check.OK {
			return guardRollBack(ctx, in, check, claimed)
		}
		w = activities.PoolWrite{}
		if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.Confirm, settle).Get(ctx, &w); err != nil {
			return nil, err
		}
	}
	if w.Outcome == activities.Refused {
		return guardRollBack(ctx, in, *w.Refusal, claimed)
	}
	return guardSwitched(ctx, in, &w)
}

func guardRollBack(ctx workflow.Context, in wfapi.SwitchInput, check activities.TargetCheck, claimed string) (*wfapi.SwitchResult, error) {
	message := resolve.Keeping(check.Message, in.From)
	var w activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.RollBack, activities.SettleInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, Generation: in.Generation,
		Reason: check.Reason, Message: message, ResourceVersion: claimed, Claimed: claimed != "",
	}).Get(ctx, &w); err != nil {
		return nil, err
	}
	switch w.Outcome {
	case activities.Landed, activities.LandedThenGone:
		return guardSwitched(ctx, in, &w)
	case activities.PoolGone:
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	case activities.Superseded:
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded}, nil
	}
	if w.FailingSince != nil {
		ev := poolevents.FailureWarning(in.Pool, in.Class, check.Reason, message, *w.FailingSince)
		if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.RecordEvent, ev).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeRolledBack, Reason: check.Reason, Message: message}, nil
}

func guardSwitched(ctx workflow.Context, in wfapi.SwitchInput, w *activities.PoolWrite) (*wfapi.SwitchResult, error) {
	switch w.Outcome {
	case activities.Superseded:
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomeSuperseded}, nil
	case activities.PoolGone:
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.RecordEvent, poolevents.Event{
		Pool: in.Pool, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSandboxConfigSwitched,
		Action: "Switch", Key: "switch/" + workflow.GetInfo(ctx).WorkflowExecution.RunID,
	}).Get(ctx, nil); err != nil {
		return nil, err
	}
	if w.Outcome == activities.LandedThenGone {
		return &wfapi.SwitchResult{Outcome: wfapi.OutcomePoolGone}, nil
	}
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, nil
}

func guardWake(ctx workflow.Context, configs []string) error {
	return workflow.ExecuteLocalActivity(guardLocal(ctx), act.WakeReleases, configs).Get(ctx, nil)
}

// guardFinish records the outcome and the summary, and continues as new
// when a re-resolution was asked for while the switch ran.
func guardFinish(ctx workflow.Context, in wfapi.SwitchInput, res *wfapi.SwitchResult, reresolve workflow.ReceiveChannel) (*wfapi.SwitchResult, error) {
	_ = workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome))
	_ = workflow.UpsertMemo(ctx, map[string]any{"summary": wfapi.SwitchSummary(in) + ": " + res.Outcome})
	if drainSignals(reresolve) > 0 {
		return nil, workflow.NewContinueAsNewError(ctx, wfapi.SwitchWorkflow, wfapi.SwitchInput{})
	}
	return res, nil
}

func drainSignals(ch workflow.ReceiveChannel) int {
	n := 0
	for ch.ReceiveAsync(nil) {
		n++
	}
	return n
}

func guardClaimInput(in wfapi.SwitchInput) activities.ClaimInput {
	return activities.ClaimInput{
		Pool: in.Pool, Class: in.Class, Config: in.To, ResourceVersion: in.PoolResourceVersion,
		ExpectFrom: true, From: in.From,
		ExpectSpec: in.SpecConfigRef != nil, SpecConfigRef: ptr.Deref(in.SpecConfigRef, ""),
		ExpectRun: in.FromRun != nil, FromRun: ptr.Deref(in.FromRun, ""),
	}
}

// TestGuardIsFaithful is the guards' control: guardSwitch unchanged
// replays every switch fixture of the version it copies, so each
// changed guardSwitch of TestReplayCatchesIncompatibleChanges fails for its
// change alone.
func TestGuardIsFaithful(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	n := 0
	for _, fx := range fixtures {
		if fx.Kind != "switch" || fx.Version != guardVersion {
			continue
		}
		n++
		t.Run(fx.Name(), func(t *testing.T) {
			r, err := newReplayer(func(reg workflows.Registry) {
				workflows.RegisterWorkflows(replacing{reg, map[string]any{wfapi.SwitchWorkflow: guardSwitch{}.run}})
			})
			require.NoError(t, err)
			require.NoError(t, ReplayFixture(r, quiet, fx))
		})
	}
	require.NotZero(t, n, "no switch fixture of v%d", guardVersion)
}

// TestOrderingCatchesWrongSwitches proves the ordering checks can
// fail: a recorded switch, its events rearranged into what a wrongly
// shaped switch would have recorded, fails checkFixture with the rule it
// breaks; the fixture as recorded passes the same harness.
func TestOrderingCatchesWrongSwitches(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		change        func(t testing.TB, h *historypb.History)
		want          string // in the failure; "" for none
	}{
		{"as recorded", "switch-confirmed", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, an operator's start", "switch-reresolve-moved", func(testing.TB, *historypb.History) {}, ""},
		{"as recorded, a claim that refused its target", "switch-claim-refused", func(testing.TB, *historypb.History) {}, ""},
		{"a switch that confirms before it claims", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			moveBefore(t, h, localMarker(t, h, "Confirm"), []*historypb.HistoryEvent{localMarker(t, h, "Claim")})
		}, "Confirm after a Claim that stands"},
		{"a switch whose claim is a regular activity", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			makeRegular(t, h, "Claim")
		}, "every step of the move is local"},
		{"a switch that confirms without claiming", "switch-confirmed", func(t testing.TB, h *historypb.History) {
			remove(h, []*historypb.HistoryEvent{localMarker(t, h, "Claim")})
		}, "Confirm after a Claim that stands"},
		{"a switch that rolls back a claim no Confirm refused", "switch-rolled-back", func(t testing.TB, h *historypb.History) {
			remove(h, []*historypb.HistoryEvent{localMarker(t, h, "Confirm")})
		}, "RollBack of a claim after a Confirm that refused the target"},
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := fixtureAt(t, tc.fixture, guardVersion)
			h, err := ReadHistory(fx.Path)
			require.NoError(t, err)
			exec, err := fx.Execution()
			require.NoError(t, err)
			tc.change(t, h)
			renumber(h)
			got := failure(t, func(tb testing.TB) { checkFixture(tb, fx, exec, h) })
			if tc.want == "" {
				require.Empty(t, got, "the recorded switch passes the checks")
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
		}
	}
}
