package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// A Confirm or RollBack that finds its claim taken by another writer (a
// switch started by hand beside the real one) writes nothing, and the
// switch ends as superseded: no event.
func TestSwitchEndsSupersededWhenItsClaimWasTaken(t *testing.T) {
	tests := []struct {
		name    string
		confirm activities.PoolWrite
		want    []string
	}{
		{name: "confirm", confirm: activities.PoolWrite{Outcome: activities.Superseded},
			want: []string{local("Protect"), local("Claim"), local("Confirm")}},
		{name: "roll back", confirm: activities.PoolWrite{Outcome: activities.Refused, Refusal: &activities.TargetCheck{Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "deleting"}},
			want: []string{local("Protect"), local("Claim"), local("Confirm"), local("RollBack")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"}, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&tt.confirm, nil)
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Claimed // the switch says its claim stands: the activity checks it
			})).Return(&activities.PoolWrite{Outcome: activities.Superseded}, nil)
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
			env.OnActivity(act.WakeReleases, mock.Anything, mock.Anything).Return(nil)

			res, err := runSwitch(t, env, switchIn)
			require.NoError(t, err)
			require.Equal(t, wfapi.OutcomeSuperseded, res.Outcome)
			require.Equal(t, tt.want, *order, "no event")
		})
	}
}

// A switch started by hand under an ID that is not its pool's switch ID
// does nothing at all: the ID names the pool a switch acts on.
func TestSwitchActsOnlyUnderItsPoolsID(t *testing.T) {
	tests := []struct{ id, err string }{
		{id: testCluster.SwitchWorkflowID("ns", "other"), err: "was given WorkerPool ns/pool"},
		{id: testCluster.SwitchWorkflowID("other-ns", "pool"), err: "was given WorkerPool ns/pool"},
		{id: "workerpool/ns/pool/switch/1", err: "a switch's workflow ID names its cluster and pool"},
		{id: "workerpool/ns/pool", err: "a switch's workflow ID names its cluster and pool"},
		{id: "my-own-switch", err: "a switch's workflow ID names its cluster and pool"},
		{id: "workerpool/ns/pool/switch", err: "a switch's workflow ID names its cluster and pool"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: tt.id})
			env.ExecuteWorkflow(wfapi.SwitchWorkflow, switchIn)
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			require.ErrorContains(t, err, tt.err)
			require.ErrorContains(t, err, activities.ErrInvalidInput)
			require.Empty(t, *order)
		})
	}
}

// testCluster is the cluster the unit tests' workflow IDs name.
const testCluster = wfapi.Cluster("c1")
