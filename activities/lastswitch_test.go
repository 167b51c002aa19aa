package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
)

// A switch's steps all run in one workflow task, and a crash runs the task
// again from its Claim's Protect: the Claim decides, from the class's
// lastSwitch stamp, what an earlier run of the task already wrote. Each
// case sets the class as some run's writes left it, then runs the claim of
// this run's move old -> new, planned when the class showed run-0.
func TestAClaimRunAgainDecidesFromTheStamp(t *testing.T) {
	const switchID = "c1/workerpool/ns/pool/switch"
	this := &v1alpha1.SwitchRunReference{WorkflowID: switchID, RunID: "run-1"}
	other := &v1alpha1.SwitchRunReference{WorkflowID: switchID, RunID: "run-2"}
	planned := &v1alpha1.SwitchRunReference{WorkflowID: switchID, RunID: "run-0"}
	failed := metav1.Condition{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "new" is being deleted; keeping "old"`,
		LastTransitionTime: metav1.Unix(1700000000, 0)}
	ref := func(name string) *v1alpha1.SandboxConfigReference {
		if name == "" {
			return nil
		}
		return &v1alpha1.SandboxConfigReference{Name: name}
	}
	tests := []struct {
		name              string
		config, pending   string
		stamp             *v1alpha1.SwitchRunReference
		conditions        []metav1.Condition
		specPin           string // the user re-pinned since the plan
		wantWrote         bool
		wantLanded        bool
		wantRolledBack    bool
		wantSuperseded    bool
		wantPending       string
		wantStamp         *v1alpha1.SwitchRunReference
		wantWarningReason string
	}{
		{name: "first run: the class as planned is claimed and stamped",
			config: "old", stamp: planned, wantWrote: true, wantPending: "new", wantStamp: this},
		{name: "the run's own claim stands: nothing to write, go on",
			config: "old", pending: "new", stamp: this, wantPending: "new", wantStamp: this},
		{name: "the run's own confirm landed: the move is reported, even after a re-pin",
			config: "new", stamp: this, specPin: "elsewhere", wantLanded: true, wantStamp: this},
		{name: "the run's own roll back landed: its Warning is due",
			config: "old", stamp: this, conditions: []metav1.Condition{failed},
			wantRolledBack: true, wantStamp: this, wantWarningReason: v1alpha1.ReasonSandboxConfigDeleting},
		{name: "the run's own roll back, the keeper resolved the class since: no Warning",
			config: "old", stamp: this, wantRolledBack: true, wantStamp: this},
		{name: "another run moved the class to the target: superseded, no event",
			config: "new", stamp: other, wantSuperseded: true, wantStamp: other},
		{name: "another run moved the class away and back (a late first attempt): superseded",
			config: "old", stamp: other, wantSuperseded: true, wantStamp: other},
		{name: "another run's claim on the target: superseded, not taken for this run's",
			config: "old", pending: "new", stamp: other, wantSuperseded: true, wantPending: "new", wantStamp: other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			pool := f.pool(t)
			st := &pool.Status.SandboxClasses[0]
			st.ConfigRef, st.PendingConfigRef, st.LastSwitch, st.Conditions = ref(tt.config), ref(tt.pending), tt.stamp, tt.conditions
			poolstatus.SetSummary(pool) // as every write leaves it
			require.NoError(t, f.store.Status().Update(context.Background(), pool))
			if tt.specPin != "" {
				pool = f.pool(t)
				pool.Spec.SandboxClasses[0].ConfigRef = ref(tt.specPin)
				require.NoError(t, f.store.Update(context.Background(), pool))
			}
			writes := f.calls.StatusWrites

			res, err := f.acts.Claim(withSwitchRun(context.Background(), this), ClaimInput{
				Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: "old",
				ExpectSpec: true, SpecConfigRef: "", ExpectRun: true, FromRun: planned.RunID,
			})
			require.NoError(t, err)
			require.Equal(t, tt.wantWrote, res.Wrote)
			require.Equal(t, tt.wantLanded, res.Outcome == Landed)
			require.Equal(t, tt.wantSuperseded, res.Outcome == Superseded)
			require.Equal(t, tt.wantRolledBack, res.Outcome == RolledBack)
			if tt.wantRolledBack {
				require.Equal(t, tt.wantWarningReason, res.Earlier.Reason)
				if tt.wantWarningReason != "" {
					require.True(t, failed.LastTransitionTime.Equal(res.Earlier.FailingSince), "the Warning keyed by the same appearance")
				}
			}
			if !tt.wantWrote {
				require.Equal(t, writes, f.calls.StatusWrites, "no write")
			}
			after := f.pool(t).Status.ClassStatus(gvisor)
			require.Equal(t, tt.wantPending, after.PendingConfigRef.NameOf())
			require.Equal(t, tt.wantStamp, after.LastSwitch)
		})
	}
}

// Every write of a switch that moves a class stamps its run: the confirm,
// the roll back, the clearing of a stale claim.
func TestSwitchWritesStampTheirRun(t *testing.T) {
	run := &v1alpha1.SwitchRunReference{WorkflowID: "c1/workerpool/ns/pool/switch", RunID: "run-1"}
	ctx := withSwitchRun(context.Background(), run)
	tests := []struct {
		name  string
		write func(f *statusFixture) error
	}{
		{"Confirm", func(f *statusFixture) error {
			if _, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"}); err != nil {
				return err
			}
			_, err := f.acts.Confirm(ctx, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2, Claimed: true})
			return err
		}},
		{"RollBack", func(f *statusFixture) error {
			if _, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"}); err != nil {
				return err
			}
			_, err := f.acts.RollBack(ctx, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2,
				Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "m", Claimed: true})
			return err
		}},
		{"AbandonClaim", func(f *statusFixture) error {
			if _, err := f.acts.Claim(context.Background(), ClaimInput{Pool: f.ref, Class: gvisor, Config: "stale"}); err != nil {
				return err
			}
			_, err := f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "stale"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			require.NoError(t, tt.write(f))
			st := f.pool(t).Status.ClassStatus(gvisor)
			require.Nil(t, st.PendingConfigRef)
			require.Equal(t, run, st.LastSwitch)
		})
	}
}

// A confirm of a claim another run holds writes nothing: a late first
// attempt of an earlier switch never completes a later switch's move.
func TestAConfirmOfAnotherRunsClaimIsSuperseded(t *testing.T) {
	f := newStatusFixture(t)
	later := withSwitchRun(context.Background(), &v1alpha1.SwitchRunReference{WorkflowID: "w", RunID: "run-3"})
	_, err := f.acts.Claim(later, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
	require.NoError(t, err)

	late := withSwitchRun(context.Background(), &v1alpha1.SwitchRunReference{WorkflowID: "w", RunID: "run-1"})
	res, err := f.acts.Confirm(late, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2, Claimed: true})
	require.NoError(t, err)
	require.Equal(t, Superseded, res.Outcome)
	require.False(t, res.Wrote)
	st := f.pool(t).Status.ClassStatus(gvisor)
	require.Equal(t, "old", st.ConfigRef.Name)
	require.Equal(t, "run-3", st.LastSwitch.RunID)
}
