package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
)

// TestSwitchWritesOnTheVersionsItKnows: the claim gets the pool's version
// the pass observed, the confirm or roll back the one the claim returned,
// so that neither reads the pool first (see activities.updateStatus).
func TestSwitchWritesOnTheVersionsItKnows(t *testing.T) {
	tests := []struct {
		name              string
		observed, claimed string
		live              *resolve.Config
		settle            string
	}{
		{name: "confirmed", observed: "41", claimed: "42", live: liveConfig("new", false), settle: "Confirm"},
		{name: "rolled back", observed: "41", claimed: "42", live: liveConfig("new", true), settle: "RollBack"},
		// A switch started before the pass passed a version, or whose
		// claim ran before it returned one.
		{name: "no versions", live: liveConfig("new", false), settle: "Confirm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			want := moveSteps("Protect", "Claim", "Confirm", "RecordEvent")
			if tt.settle == "RollBack" {
				want = moveSteps("Protect", "Claim", "Confirm", "RollBack", "RecordEvent")
			}
			in := switchIn
			in.PoolResourceVersion = tt.observed
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(c activities.ClaimInput) bool {
				return c.ResourceVersion == tt.observed
			})).Return(&activities.PoolWrite{Outcome: activities.Written, ResourceVersion: tt.claimed}, nil).Once()
			onClaimed := mock.MatchedBy(func(s activities.SettleInput) bool { return s.ResourceVersion == tt.claimed })
			env.OnActivity(act.Confirm, mock.Anything, onClaimed).Return(confirmAgainst(tt.live)).Maybe()
			env.OnActivity(act.RollBack, mock.Anything, onClaimed).Return(rolledBackNow(), nil).Maybe()
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)

			executeSwitch(env, in)
			require.NoError(t, env.GetWorkflowError())
			require.Equal(t, want, *order)
			env.AssertExpectations(t)
		})
	}
}
