package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestSwitchRefusesHostileInput: an input no step could carry out (a
// switch started by hand) fails the switch at once, as no retry can fix
// it, before any step: a name that is not one a Kubernetes object can
// have would make every step fail client-side and retry forever, holding
// the pool's switch ID.
func TestSwitchRefusesHostileInput(t *testing.T) {
	tests := []struct {
		name   string
		id     string // "" for the pool's switch ID
		change func(in *wfapi.SwitchInput)
		want   string
	}{
		{name: "an unknown class", change: func(in *wfapi.SwitchInput) { in.Class = "nope" },
			want: `switch of WorkerPool ns/pool refused: unknown sandbox class "nope"`},
		{name: "no class", change: func(in *wfapi.SwitchInput) { in.Class = "" },
			want: `switch of WorkerPool ns/pool refused: unknown sandbox class ""`},
		{name: "a move without the pool's UID", change: func(in *wfapi.SwitchInput) { in.Pool.UID = "" },
			want: "switch of WorkerPool ns/pool refused: a move names the pool's UID"},
		{name: "a target that is no object name", change: func(in *wfapi.SwitchInput) { in.To = "a/b" },
			want: `switch of WorkerPool ns/pool refused: SandboxConfig name "a/b" is not a DNS subdomain`},
		{name: "a source that is no object name", change: func(in *wfapi.SwitchInput) { in.From = "Old" },
			want: `switch of WorkerPool ns/pool refused: SandboxConfig name "Old" is not a DNS subdomain`},
		{name: "a claim to clear that is no object name", change: func(in *wfapi.SwitchInput) { in.To, in.Abandon = "", "x y" },
			want: `switch of WorkerPool ns/pool refused: SandboxConfig name "x y" is not a DNS subdomain`},
		{name: "a namespace that is no namespace name", id: testCluster.SwitchWorkflowID("Bad.NS", "pool"),
			change: func(in *wfapi.SwitchInput) { in.Pool.Namespace, in.Pool.Name = "", "" },
			want:   `switch of WorkerPool Bad.NS/pool refused: namespace "Bad.NS" is not a DNS label`},
		{name: "a pool name that is no object name", id: testCluster.SwitchWorkflowID("ns", "Pool_1"),
			change: func(in *wfapi.SwitchInput) { in.Pool.Namespace, in.Pool.Name = "", "" },
			want:   `switch of WorkerPool ns/Pool_1 refused: WorkerPool name "Pool_1" is not a DNS subdomain`},
		{name: "an operator's look at a pool name that is no object name", id: testCluster.SwitchWorkflowID("ns", "Pool_1"),
			change: func(in *wfapi.SwitchInput) { *in = wfapi.SwitchInput{} },
			want:   `switch of WorkerPool ns/Pool_1 refused: WorkerPool name "Pool_1" is not a DNS subdomain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			// A step that runs fails the switch, saying so.
			ran := temporal.NewNonRetryableApplicationError("a step ran", "Test", nil)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(nil, ran)
			env.OnActivity(act.AbandonClaim, mock.Anything, mock.Anything).Return(nil, ran)
			env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(nil, ran)
			in := switchIn
			tt.change(&in)
			id := tt.id
			if id == "" {
				id = testCluster.SwitchWorkflowID("ns", "pool")
			}
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
			env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			require.ErrorContains(t, err, tt.want)
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app))
			require.True(t, app.NonRetryable())
			require.Equal(t, activities.ErrInvalidInput, app.Type())
			require.Empty(t, *order, "no step ran")
		})
	}
}

// TestSwitchRollsBackARefusedConfirm: a Confirm whose live read finds
// the target unfit writes nothing; the switch rolls back with the reason it
// gave, and records no SandboxConfigSwitched. A target found unprotected is
// protected again and confirmed once more: one that is still unprotected
// then (its finalizer taken off by hand again) rolls back.
func TestSwitchRollsBackARefusedConfirm(t *testing.T) {
	env, order := newSwitchEnv(t)
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"}, nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{ResourceVersion: "8",
		Outcome: activities.Refused, Refusal: &activities.TargetCheck{Reason: v1alpha1.ReasonSandboxConfigNotProtected, Message: `SandboxConfig "new" does not carry the finalizer`}}, nil)
	env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
		return in.Claimed && in.Reason == v1alpha1.ReasonSandboxConfigNotProtected &&
			in.Message == `SandboxConfig "new" does not carry the finalizer; keeping "old"`
	})).Return(rolledBackNow(), nil)
	var event events.PoolEvent
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in events.PoolEvent) error {
		event = in
		return nil
	})
	res, err := runSwitch(t, env, switchIn)
	require.NoError(t, err)
	require.Equal(t, []string{local("Protect"), local("Claim"), local("Confirm"), local("Protect"), local("Confirm"), local("RollBack"), local("RecordEvent")}, *order)
	require.Equal(t, wfapi.OutcomeRolledBack, res.Outcome)
	require.Equal(t, v1alpha1.ReasonSandboxConfigNotProtected, res.Reason)
	require.Equal(t, v1alpha1.ReasonSandboxConfigNotProtected, event.Reason)
}

// TestSwitchClaimsOnThePlannedSpec: the claim carries the spec the move
// was planned from, so that it is written only while the spec still asks
// for it; an input without it (a switch started by hand) expects nothing
// of the spec.
func TestSwitchClaimsOnThePlannedSpec(t *testing.T) {
	pinned := "new"
	tests := []struct {
		name       string
		spec       *string
		wantExpect bool
		wantSpec   string
	}{
		{name: "planned on a pin", spec: &pinned, wantExpect: true, wantSpec: "new"},
		{name: "planned on the default", spec: new(string), wantExpect: true},
		{name: "an input without it", spec: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			var claim activities.ClaimInput
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (*activities.PoolWrite, error) {
				claim = in
				return &activities.PoolWrite{Outcome: activities.Superseded}, nil
			})
			in := switchIn
			in.SpecConfigRef = tt.spec
			res, err := runSwitch(t, env, in)
			require.NoError(t, err)
			require.Equal(t, wfapi.OutcomeSuperseded, res.Outcome)
			require.Equal(t, tt.wantExpect, claim.ExpectSpec)
			require.Equal(t, tt.wantSpec, claim.SpecConfigRef)
		})
	}
	t.Run("an operator's look plans with the spec it read", func(t *testing.T) {
		obs := &activities.Observation{
			Exists: true, UID: "uid-1", Generation: 3,
			Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "new"}}},
			Configs: []resolve.Config{{Name: "new", Class: v1alpha1.SandboxClassGVisor}},
		}
		in, ok := obs.NextMove(wfapi.PoolRef{Namespace: "ns", Name: "pool"})
		require.True(t, ok)
		require.NotNil(t, in.SpecConfigRef)
		require.Equal(t, "new", *in.SpecConfigRef)
	})
}

// carriedAttributes runs a switch and returns the move's search
// attributes it ends with.
func carriedAttributes(ctx workflow.Context, in wfapi.SwitchInput) (map[string]string, error) {
	_, err := Switch(ctx, in)
	got := map[string]string{}
	sa := workflow.GetTypedSearchAttributes(ctx)
	for _, k := range []temporal.SearchAttributeKeyKeyword{searchattr.OutcomeKey, searchattr.FromConfigKey, searchattr.ToConfigKey, searchattr.SandboxClassKey, searchattr.WorkerPoolKey} {
		if v, ok := sa.GetKeyword(k); ok {
			got[k.GetName()] = v
		}
	}
	return got, err
}

// TestAContinuedSwitchDropsThePreviousMove: continue-as-new carries the
// run's search attributes into the next; a run continued for a fresh look
// does not show the previous run's move or outcome as its own.
func TestAContinuedSwitchDropsThePreviousMove(t *testing.T) {
	env, _ := newSwitchEnv(t)
	env.RegisterWorkflowWithOptions(carriedAttributes, workflow.RegisterOptions{Name: "carriedAttributes"})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.SwitchWorkflowID("ns", "pool")})
	env.SetContinuedExecutionRunID("previous-run")
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		searchattr.WorkerPoolKey.ValueSet("ns/pool"), searchattr.SandboxClassKey.ValueSet("gvisor"),
		searchattr.FromConfigKey.ValueSet("old"), searchattr.ToConfigKey.ValueSet("new"),
		searchattr.OutcomeKey.ValueSet(wfapi.OutcomeConfirmed))))
	env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{
		Exists: true, UID: "uid-1", Generation: 3,
		Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
		Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "def"}}}},
		Configs: []resolve.Config{{Name: "def", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}},
	}, nil)
	env.ExecuteWorkflow("carriedAttributes", wfapi.SwitchInput{})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got map[string]string
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, map[string]string{
		searchattr.WorkerPool: "ns/pool",
		searchattr.Outcome:    wfapi.OutcomeUpToDate,
	}, got, "only this run's look and outcome")
}

// TestAReresolveBeforeTheFirstTaskOfAMove: an operator's signal-with-start
// that lands on a starter-started run before its first task asked for a
// look at the pool as it is then; the run's move was planned before, so it
// is not that look: the run, which has written nothing yet, yields before
// its claim and continues as new for it. A run started with no input is the
// look, and drains it.
func TestAReresolveBeforeTheFirstTaskOfAMove(t *testing.T) {
	// The signal is there before the first Protect starts, which is
	// cancelled; the Claim only looks (OnlyOwn): the class holds nothing of the run,
	// or (a re-run of the task after its earlier run claimed, its
	// completion refused for the signal) the run's own claim.
	for _, tt := range []struct {
		name      string
		look      activities.PoolWrite
		wantSteps []string
	}{
		{name: "a move", look: activities.PoolWrite{Outcome: activities.Unclaimed, ResourceVersion: "7"},
			wantSteps: []string{local("Claim")}},
		{name: "a move its earlier run claimed", look: activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"},
			wantSteps: []string{local("Claim"), local("Confirm"), local("RecordEvent")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool { return in.OnlyOwn })).Return(&tt.look, nil).Once()
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, 0)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.SwitchWorkflowID("ns", "pool")})
			env.ExecuteWorkflow(wfapi.SwitchWorkflow, switchIn)
			require.True(t, env.IsWorkflowCompleted())
			steps := *order
			if len(steps) > 0 && steps[0] == local("Protect") {
				steps = steps[1:] // the first Protect, started before the signal cancelled it
			}
			require.Equal(t, tt.wantSteps, steps, "nothing is claimed on the plan made before the signal; a claim made is carried through")
			err := env.GetWorkflowError()
			require.True(t, workflow.IsContinueAsNewError(err), "continued as new for the look asked for, got %v", err)
			var can *workflow.ContinueAsNewError
			require.True(t, errors.As(err, &can))
		})
	}
	t.Run("no input", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{}, nil)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalReresolve, nil) }, 0)
		res, err := runSwitch(t, env, wfapi.SwitchInput{})
		require.NoError(t, err, "the run is the look asked for")
		require.Equal(t, wfapi.OutcomePoolGone, res.Outcome)
		require.Equal(t, []string{"Observe"}, *order)
	})
}

// TestSwitchRollsBackARefusedClaim: a Claim that finds its target not
// protected writes nothing; the switch rolls back as after a refused
// Protect, with nothing claimed.
func TestSwitchRollsBackARefusedClaim(t *testing.T) {
	env, order := newSwitchEnv(t)
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{ResourceVersion: "7",
		Outcome: activities.Refused, Refusal: &activities.TargetCheck{Reason: v1alpha1.ReasonSandboxConfigNotProtected, Message: `SandboxConfig "new" does not carry the finalizer`}}, nil)
	env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
		return !in.Claimed && in.Reason == v1alpha1.ReasonSandboxConfigNotProtected
	})).Return(rolledBackNow(), nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Superseded}, nil)
	res, err := runSwitch(t, env, switchIn)
	require.NoError(t, err)
	require.Equal(t, []string{local("Protect"), local("Claim"), local("RollBack"), local("RecordEvent")}, *order)
	require.Equal(t, wfapi.OutcomeRolledBack, res.Outcome)
}
