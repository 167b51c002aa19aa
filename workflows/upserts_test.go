package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestSwitchUpsertsOnlyWhatItsStartLacks counts what a confirmed switch
// records beside its steps, each upsert a command, a history event and a
// visibility write: its Outcome, always; the memo's summary of its move
// only when the memo it started with does not hold it already (the
// starter's start writes it; an operator's names no move).
func TestSwitchUpsertsOnlyWhatItsStartLacks(t *testing.T) {
	moveSummary := wfapi.SwitchSummary(switchIn)
	tests := []struct {
		name      string
		in        wfapi.SwitchInput
		startMemo map[string]any
		wantMemos []string
	}{
		{name: "started by the starter", in: switchIn, startMemo: map[string]any{"summary": moveSummary}},
		{name: "started by hand with the move and no memo", in: switchIn, wantMemos: []string{moveSummary}},
		{name: "started by an operator", in: wfapi.SwitchInput{},
			startMemo: map[string]any{"summary": "ns/pool: re-resolve on request"}, wantMemos: []string{moveSummary}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := newSwitchEnv(t)
			require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
				searchattr.KubernetesClusterKey.ValueSet(string(testCluster)))))
			if tt.startMemo != nil {
				require.NoError(t, env.SetMemoOnStart(tt.startMemo))
			}
			var memos, outcomes []string
			env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
				memos = append(memos, args.Get(0).(map[string]any)["summary"].(string))
			}).Return(nil).Maybe()
			env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
				if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(searchattr.OutcomeKey); ok {
					outcomes = append(outcomes, v)
				}
			}).Return(nil).Maybe()
			env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{
				Exists: true, UID: "uid-1", Generation: 3, ResourceVersion: "7",
				Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
				Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"}}}},
				Configs: []resolve.Config{{Name: "new", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}, {Name: "old", Class: v1alpha1.SandboxClassGVisor}},
			}, nil).Maybe()
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"}, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
			res, err := runSwitch(t, env, tt.in)
			require.NoError(t, err)
			require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
			require.Equal(t, []string{wfapi.OutcomeConfirmed}, outcomes, "the Outcome, upserted once, at the end")
			require.Equal(t, tt.wantMemos, memos, "the memo's summary, upserted only when the start's does not name the move")
		})
	}
}
