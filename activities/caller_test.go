package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// Confirm and RollBack write only while the class's pendingConfigRef names
// their config: a claim another writer displaced, confirmed or cleared is
// superseded, and nothing is written. Their own retries still land once.
func TestSettleOnlyWhileTheClaimStands(t *testing.T) {
	ctx := context.Background()
	claim := func(config string) func(t *testing.T, f *statusFixture) {
		return func(t *testing.T, f *statusFixture) {
			_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: config})
			require.NoError(t, err)
		}
	}
	confirm := SettleInput{Class: gvisor, Config: "new", Generation: 2, Claimed: true}
	rollBack := SettleInput{Class: gvisor, Config: "new", Generation: 2, Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "deleting", Claimed: true}
	// A roll back after a refused Protect, of a move planned from from
	// (and, with expectRun, from the class last written by fromRun).
	noClaim := func(from string, expectRun bool, fromRun string) SettleInput {
		r := rollBack
		r.Claimed, r.From, r.ExpectRun, r.FromRun = false, from, expectRun, fromRun
		return r
	}
	tests := []struct {
		name       string
		before     []func(t *testing.T, f *statusFixture)
		confirm    bool
		in         SettleInput
		superseded bool
		wantConfig string
		wantPend   string
	}{
		{name: "confirm of a standing claim", before: nil, confirm: true, in: confirm, wantConfig: "new"},
		{name: "confirm of a claim another switch displaced", before: nil, confirm: true, in: confirm,
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "confirm of a claim another switch cleared", confirm: true, in: confirm,
			superseded: true, wantConfig: "old"},
		{name: "roll back of a standing claim", in: rollBack, wantConfig: "old"},
		{name: "roll back of a claim another switch displaced", in: rollBack,
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "roll back with no claim (protection refused) of a class as planned writes its condition", in: noClaim("old", false, ""),
			wantConfig: "old"},
		{name: "roll back with no claim of a class holding another claim writes nothing", in: noClaim("old", false, ""),
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "roll back with no claim of a class off its plan's From writes nothing", in: noClaim("older", false, ""),
			superseded: true, wantConfig: "old"},
		{name: "roll back with no claim of a class another run wrote since the plan writes nothing", in: noClaim("old", true, "run-0"),
			superseded: true, wantConfig: "old"},
	}
	// The state before each settle: "new" claimed, then changed by the
	// case's other writer.
	tests[0].before = []func(*testing.T, *statusFixture){claim("new")}
	tests[1].before = []func(*testing.T, *statusFixture){claim("new"), claim("other")}
	tests[2].before = []func(*testing.T, *statusFixture){claim("new"), func(t *testing.T, f *statusFixture) {
		_, err := f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
		require.NoError(t, err)
	}}
	tests[3].before = []func(*testing.T, *statusFixture){claim("new")}
	tests[4].before = []func(*testing.T, *statusFixture){claim("new"), claim("other")}
	tests[6].before = []func(*testing.T, *statusFixture){claim("other")}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			for _, b := range tt.before {
				b(t, f)
			}
			in := tt.in
			in.Pool = f.ref
			settle := f.acts.RollBack
			if tt.confirm {
				settle = f.acts.Confirm
			}
			before := f.pool(t)
			res, err := settle(ctx, in)
			require.NoError(t, err)
			require.Equal(t, tt.superseded, res.Outcome == Superseded)
			got := f.pool(t)
			if tt.superseded {
				require.False(t, res.Wrote)
				require.Equal(t, before.ResourceVersion, got.ResourceVersion, "a superseded settle writes nothing")
			} else {
				require.True(t, res.Wrote)
				// A retry (the completion lost) writes nothing more and is
				// not taken for a takeover.
				again, err := settle(ctx, in)
				require.NoError(t, err)
				require.False(t, again.Wrote)
				require.Equal(t, Written, again.Outcome, "a retry of a landed settle is not superseded")
			}
			st := got.Status.ClassStatus(gvisor)
			require.Equal(t, tt.wantConfig, st.ConfigRef.NameOf())
			require.Equal(t, tt.wantPend, st.PendingConfigRef.NameOf())
			if !tt.superseded && !tt.confirm {
				c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
				require.NotNil(t, c)
				require.Equal(t, metav1.ConditionFalse, c.Status)
			}
		})
	}
}

func TestCallerNamesPool(t *testing.T) {
	ref := wfapi.PoolRef{Namespace: "ns", Name: "pool"}
	c := wfapi.Cluster("c1")
	tests := []struct {
		id   string
		want bool
	}{
		{c.SwitchWorkflowID("ns", "pool"), true},
		{"workerpool/ns/pool/switch", false},
		{"c1/workerpool/ns/pool/switch/3", false},
		{"c1/workerpool/ns/pool", false},
		{"c1/workerpool/ns/pool/attack", false},
		{c.SwitchWorkflowID("ns", "other"), false},
		{c.SwitchWorkflowID("other", "pool"), false},
		{c.SwitchWorkflowID("ns", "pool-2"), false},
		{"c1/workerpool/ns/poo/switch", false},
		{c.ReleaseWorkflowID("pool"), false},
		{"my-switch", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			require.Equal(t, tt.want, callerNamesPool(tt.id, ref))
		})
	}
}
