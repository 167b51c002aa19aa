package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// requireInvalidInput asserts that err is the non-retryable InvalidInput
// failure no retry can fix, saying what it contains.
func requireInvalidInput(t *testing.T, err error, contains string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "an application error, got %v", err)
	require.True(t, app.NonRetryable(), "not retried: %v", err)
	require.Equal(t, ErrInvalidInput, app.Type())
	require.ErrorContains(t, err, contains)
}

// config is a SandboxConfig of the fake API server.
func config(name string, class v1alpha1.SandboxClass, protected bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SandboxConfigSpec{SandboxClass: class}}
	if protected {
		c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
	}
	return c
}

// TestConfirmChecksItsTargetLive: Confirm names a config in configRef only
// when a live read finds it of the class, not in deletion and protected;
// otherwise it writes nothing and reports why, whoever scheduled it with
// whatever claim. A retry of a confirm that landed is not refused for what
// happened to the config since: the move happened.
func TestConfirmChecksItsTargetLive(t *testing.T) {
	tests := []struct {
		name       string
		config     *v1alpha1.SandboxConfig // "new" in the API server, if any
		deleting   bool
		wantReason string // "" for a confirm
	}{
		{name: "protected, of the class", config: config("new", gvisor, true)},
		{name: "missing", wantReason: v1alpha1.ReasonSandboxConfigNotFound},
		{name: "not protected", config: config("new", gvisor, false), wantReason: v1alpha1.ReasonSandboxConfigNotProtected},
		{name: "of another class", config: config("new", v1alpha1.SandboxClassMicroVM, true), wantReason: v1alpha1.ReasonSandboxClassMismatch},
		{name: "in deletion", config: config("new", gvisor, true), deleting: true, wantReason: v1alpha1.ReasonSandboxConfigDeleting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newStatusFixture(t)
			// Replace the fixture's "new": unprotect it, then delete it.
			var c v1alpha1.SandboxConfig
			require.NoError(t, f.store.Get(ctx, ctrlclient.ObjectKey{Name: "new"}, &c))
			c.Finalizers = nil
			require.NoError(t, f.store.Update(ctx, &c))
			require.NoError(t, f.store.Delete(ctx, &c))
			if tt.config != nil {
				require.NoError(t, f.store.Create(ctx, tt.config))
				if tt.deleting {
					require.NoError(t, f.store.Delete(ctx, tt.config)) // held by its finalizer
				}
			}
			// The claim, written as a Claim scheduled by anyone could
			// have before the config changed.
			p := f.pool(t)
			p.Status.SandboxClasses[0].PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: "new"}
			require.NoError(t, f.store.Status().Update(ctx, p))
			before := f.pool(t)

			in := SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2, Claimed: true}
			res, err := f.acts.Confirm(ctx, in)
			require.NoError(t, err)
			st := f.pool(t).Status.ClassStatus(gvisor)
			if tt.wantReason == "" {
				require.Equal(t, Written, res.Outcome)
				require.True(t, res.Wrote)
				require.Equal(t, "new", st.ConfigRef.NameOf())
				return
			}
			require.Equal(t, Refused, res.Outcome, "refused")
			require.Equal(t, tt.wantReason, res.Refusal.Reason)
			require.Contains(t, res.Refusal.Message, `"new"`)
			require.False(t, res.Wrote)
			require.Equal(t, before.ResourceVersion, f.pool(t).ResourceVersion, "a refused confirm writes nothing")
			require.Equal(t, "old", st.ConfigRef.NameOf())
		})
	}

	t.Run("a retry of a landed confirm, its target marked for deletion since", func(t *testing.T) {
		ctx := context.Background()
		f := newStatusFixture(t)
		_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
		require.NoError(t, err)
		in := SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2}
		first, err := f.acts.Confirm(ctx, in)
		require.NoError(t, err)
		require.True(t, first.Wrote)
		require.NoError(t, f.store.Delete(ctx, config("new", gvisor, true))) // held by its finalizer

		again, err := f.acts.Confirm(ctx, in)
		require.NoError(t, err)
		require.Equal(t, Written, again.Outcome, "the move happened")
		require.NotEqual(t, Superseded, again.Outcome)
		require.Equal(t, "new", f.pool(t).Status.ClassStatus(gvisor).ConfigRef.NameOf())
	})
}

// TestStatusWritesRefuseAClassTheSpecLacks: a switch's status write for a
// class the pool's spec does not have (a switch started by hand) fails at
// once, as no retry can fix it, and writes nothing: it would create a
// status entry nothing clears.
func TestStatusWritesRefuseAClassTheSpecLacks(t *testing.T) {
	ctx := context.Background()
	micro := v1alpha1.SandboxClassMicroVM
	writes := []struct {
		name  string
		write func(f *statusFixture) error
	}{
		{"Claim", func(f *statusFixture) error {
			_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: micro, Config: "new"})
			return err
		}},
		{"Confirm", func(f *statusFixture) error {
			_, err := f.acts.Confirm(ctx, SettleInput{Pool: f.ref, Class: micro, Config: "new", Generation: 2})
			return err
		}},
		{"RollBack", func(f *statusFixture) error {
			_, err := f.acts.RollBack(ctx, SettleInput{Pool: f.ref, Class: micro, Config: "new", Generation: 2, Reason: v1alpha1.ReasonSandboxConfigNotFound, Message: "m"})
			return err
		}},
		{"AbandonClaim", func(f *statusFixture) error {
			_, err := f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: micro, Config: "new"})
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			f := newStatusFixture(t)
			before := f.pool(t)
			requireInvalidInput(t, w.write(f), `WorkerPool ns/pool has no sandbox class "microvm"`)
			got := f.pool(t)
			require.Equal(t, before.ResourceVersion, got.ResourceVersion, "nothing written")
			require.Nil(t, got.Status.ClassStatus(micro))
		})
	}
}

// TestClaimOfAPlanTheSpecNoLongerAsks: a claim planned from the class's
// spec.configRef (or its following the default) is written only while the
// spec still says the same: a re-pin since the plan supersedes it, a scale
// (another generation, the same class entry) does not. A claim whose input
// names no spec (a switch started by hand) expects nothing of it.
func TestClaimOfAPlanTheSpecNoLongerAsks(t *testing.T) {
	tests := []struct {
		name           string
		spec           string // the class's spec.configRef now, "" for the default
		expect         bool
		planned        string
		wantSuperseded bool
	}{
		{name: "planned on the default, still on it (a scale since)", expect: true},
		{name: "planned on a pin, still pinned there", spec: "new", expect: true, planned: "new"},
		{name: "planned on a pin, re-pinned since", spec: "old", expect: true, planned: "new", wantSuperseded: true},
		{name: "planned on a pin, back on the default since", expect: true, planned: "new", wantSuperseded: true},
		{name: "planned on the default, pinned since", spec: "other", expect: true, wantSuperseded: true},
		{name: "no spec recorded in the input", spec: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newStatusFixture(t)
			p := f.pool(t)
			if tt.spec != "" {
				p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: tt.spec}
			}
			three := int32(3)
			p.Spec.Replicas = &three
			require.NoError(t, f.store.Update(ctx, p))
			before := f.pool(t)

			res, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: "old",
				ExpectSpec: tt.expect, SpecConfigRef: tt.planned})
			require.NoError(t, err)
			require.Equal(t, tt.wantSuperseded, res.Outcome == Superseded)
			st := f.pool(t).Status.ClassStatus(gvisor)
			if tt.wantSuperseded {
				require.Equal(t, before.ResourceVersion, f.pool(t).ResourceVersion, "a superseded claim writes nothing")
				require.Nil(t, st.PendingConfigRef)
				return
			}
			require.Equal(t, "new", st.PendingConfigRef.NameOf())
		})
	}
}

// TestClaimNamesOnlyAProtectedConfig: a claim for a config that is not
// protected (a Claim scheduled without the switch's Protect) writes
// nothing and says why; a retry of a claim already written is not read
// again.
func TestClaimNamesOnlyAProtectedConfig(t *testing.T) {
	ctx := context.Background()
	f := newStatusFixture(t)
	require.NoError(t, f.store.Create(ctx, config("bare", gvisor, false)))
	before := f.pool(t)
	res, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "bare", ExpectFrom: true, From: "old"})
	require.NoError(t, err)
	require.Equal(t, Refused, res.Outcome)
	require.Equal(t, v1alpha1.ReasonSandboxConfigNotProtected, res.Refusal.Reason)
	require.False(t, res.Wrote)
	require.Equal(t, before.ResourceVersion, f.pool(t).ResourceVersion, "nothing written")
	require.Nil(t, f.pool(t).Status.ClassStatus(gvisor).PendingConfigRef)

	res, err = f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: "old"})
	require.NoError(t, err)
	require.Equal(t, Written, res.Outcome, "a protected config is claimed")
	require.Equal(t, "new", f.pool(t).Status.ClassStatus(gvisor).PendingConfigRef.NameOf())
}
