package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// A Confirm or RollBack that finds its claim taken by another writer (a
// switch started by hand beside the real one) writes nothing, and the
// switch ends as superseded: no event, whichever shape it has.
func TestSwitchEndsSupersededWhenItsClaimWasTaken(t *testing.T) {
	legacyIn := leanIn
	legacyIn.Lean = false
	tests := []struct {
		name    string
		in      SwitchInput
		id      string
		live    *resolve.Config
		settle  string
		want    []string
		outcome string
	}{
		{name: "lean, confirm", in: leanIn, id: wfapi.PoolSwitchWorkflowID("ns", "pool"), live: liveConfig("new", false),
			want: []string{local("Protect"), "Claim", local("ReadConfig"), local("Confirm")}},
		{name: "lean, roll back", in: leanIn, id: wfapi.PoolSwitchWorkflowID("ns", "pool"), live: liveConfig("new", true),
			want: []string{local("Protect"), "Claim", local("ReadConfig"), local("RollBack")}},
		{name: "older shape, confirm", in: legacyIn, id: wfapi.SwitchWorkflowID("ns", "pool", 4), live: liveConfig("new", false),
			want: []string{local("Protect"), "Claim", local("ReadConfig"), "Confirm"}},
		{name: "older shape, roll back", in: legacyIn, id: wfapi.SwitchWorkflowID("ns", "pool", 4), live: liveConfig("new", true),
			want: []string{local("Protect"), "Claim", local("ReadConfig"), "RollBack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Wrote: true, ResourceVersion: "8"}, nil)
			env.OnActivity(act.ReadConfig, mock.Anything, "new").Return(tt.live, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Superseded: true}, nil)
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Claimed // the switch says its claim stands: the activity checks it
			})).Return(&activities.PoolWrite{Superseded: true}, nil)
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
			env.OnActivity(act.WakeReleases, mock.Anything, mock.Anything).Return(nil)

			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: tt.id})
			env.ExecuteWorkflow(wfapi.SwitchWorkflow, tt.in)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res SwitchResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, wfapi.OutcomeSuperseded, res.Outcome)
			require.Equal(t, tt.want, *order, "no event")
		})
	}
}

// A switch of the older shape (a pool workflow's child) started by hand
// with an ID of another pool's does nothing at all.
func TestSwitchOfTheOlderShapeActsOnlyOnThePoolItsIDNames(t *testing.T) {
	for _, id := range []string{wfapi.SwitchWorkflowID("ns", "other", 1), wfapi.SwitchWorkflowID("other-ns", "pool", 1), "my-own-switch", wfapi.PoolWorkflowID("ns", "pool")} {
		t.Run(id, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			in := leanIn
			in.Lean = false
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
			env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			require.ErrorContains(t, err, "a switch acts only on the pool its ID names")
			require.ErrorContains(t, err, activities.ErrInvalidInput)
			require.Empty(t, *order)
		})
	}
}
