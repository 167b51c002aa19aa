package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestSwitchShowsItsOutcome: the Web UI's current details of a switch
// (the metadata query) name its outcome and its move once it is done.
func TestSwitchShowsItsOutcome(t *testing.T) {
	env, _ := newSwitchEnv(t)
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
	res, err := runSwitch(t, env, switchIn)
	require.NoError(t, err)
	require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)

	v, err := env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	require.Equal(t, "- **outcome**: confirmed\n- **move**: gvisor \"old\" → \"new\"", md.CurrentDetails)
}
