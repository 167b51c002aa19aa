package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
)

// The switch's claim is written only while the class still names the
// config the move was decided from.
func TestClaimExpectingFrom(t *testing.T) {
	tests := []struct {
		name           string
		from           string
		wantSuperseded bool
	}{
		{name: "the class is where the move was decided", from: "old"},
		{name: "another switch moved the class since", from: "older", wantSuperseded: true},
		{name: "the move was decided before the first resolution", from: "", wantSuperseded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			res, err := f.acts.Claim(context.Background(), ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: tt.from})
			require.NoError(t, err)
			require.Equal(t, tt.wantSuperseded, res.Outcome == Superseded)
			st := f.pool(t).Status.ClassStatus(gvisor)
			if tt.wantSuperseded {
				require.Nil(t, st.PendingConfigRef, "a superseded claim writes nothing")
				return
			}
			require.Equal(t, "new", st.PendingConfigRef.Name)
		})
	}
}

// A roll back re-run after an earlier run of the switch's task confirmed
// keeps the move and says so, rather than undoing it: the class carries
// the run's own stamp.
func TestRollBackAfterAnEarlierConfirm(t *testing.T) {
	f := newStatusFixture(t)
	run := &v1alpha1.SwitchRunReference{WorkflowID: "c1/workerpool/ns/pool/switch", RunID: "run-1"}
	ctx := withSwitchRun(context.Background(), run)
	_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: "old"})
	require.NoError(t, err)
	_, err = f.acts.Confirm(ctx, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2, Claimed: true})
	require.NoError(t, err)
	require.Equal(t, run, f.pool(t).Status.ClassStatus(gvisor).LastSwitch, "the confirm stamps its run")

	for _, claimed := range []bool{true, false} { // false: the re-run's Protect was refused
		res, err := f.acts.RollBack(ctx, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2,
			Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "new" is being deleted; keeping "old"`, Claimed: claimed})
		require.NoError(t, err)
		require.Equal(t, Landed, res.Outcome)
		require.False(t, res.Wrote)
		st := f.pool(t).Status.ClassStatus(gvisor)
		require.Equal(t, "new", st.ConfigRef.Name)
		require.Equal(t, "True", string(st.Conditions[0].Status))
	}

	// Another run never takes the class's config for its own confirm.
	other := withSwitchRun(context.Background(), &v1alpha1.SwitchRunReference{WorkflowID: run.WorkflowID, RunID: "run-2"})
	res, err := f.acts.RollBack(other, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2,
		Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "m", Claimed: true})
	require.NoError(t, err)
	require.Equal(t, Superseded, res.Outcome)
}

func TestAbandonClaim(t *testing.T) {
	f := newStatusFixture(t)
	ctx := context.Background()
	_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "stale"})
	require.NoError(t, err)

	res, err := f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "other"})
	require.NoError(t, err)
	require.False(t, res.Wrote, "a claim on another config is not this one's to clear")
	require.Equal(t, "stale", f.pool(t).Status.ClassStatus(gvisor).PendingConfigRef.Name)

	res, err = f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "stale"})
	require.NoError(t, err)
	require.True(t, res.Wrote)
	st := f.pool(t).Status.ClassStatus(gvisor)
	require.Nil(t, st.PendingConfigRef)
	require.Equal(t, "old", st.ConfigRef.Name)
}

// A switch's first Protect trusts a cache that shows the target usable
// and protected, and reads live otherwise.
func TestProtectFromCache(t *testing.T) {
	cfg := func(name string, protected, deleting bool) *v1alpha1.SandboxConfig {
		c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SandboxConfigSpec{SandboxClass: gvisor}}
		if protected {
			c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
		}
		if deleting {
			now := metav1.Now()
			c.DeletionTimestamp = &now
			c.Finalizers = append(c.Finalizers, "example.com/hold")
		}
		return c
	}
	tests := []struct {
		name      string
		cached    *v1alpha1.SandboxConfig
		wantReads int
		wantOK    bool
	}{
		{name: "protected in the cache: no read", cached: cfg("c", true, false), wantReads: 0, wantOK: true},
		{name: "not yet protected: read and patch", cached: cfg("c", false, false), wantReads: 1, wantOK: true},
		{name: "in deletion in the cache: read live to refuse", cached: cfg("c", true, true), wantReads: 1, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(tt.cached).Build()
			reads := 0
			live := interceptor.NewClient(store, interceptor.Funcs{
				Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
					reads++
					return c.Get(ctx, key, obj, opts...)
				},
			})
			a := &Activities{Live: live, Cache: store}
			check, err := a.Protect(context.Background(), ProtectInput{Config: "c", Class: gvisor, FromCache: true})
			require.NoError(t, err)
			require.Equal(t, tt.wantOK, check.OK)
			require.Equal(t, tt.wantReads, reads)
		})
	}
}
