package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// TestReplayCatchesIncompatibleChanges proves the replay test can fail: the
// recorded histories, replayed against deliberately changed copies of the
// workflows registered under the production names, fail with a
// nondeterminism error. Were the replayer not to look at the commands, these
// would pass and TestReplay would prove nothing.
func TestReplayCatchesIncompatibleChanges(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		workflow      string
		changed       any
	}{
		{"a switch that skips the claim", "switch-confirmed", wfapi.SwitchWorkflow, switchWithoutClaim},
		{"a switch that reads before it claims", "switch-confirmed", wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a running switch that reads before it claims", "switch-open-at-read", wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a release that lists live before asking the cache", "release-at-once", wfapi.ReleaseWorkflow, releaseLiveFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := latest(t, tc.fixture).Path

			// The same fixture replays with the real code...
			r, err := NewReplayer()
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(quiet, path))

			// ...and fails with the changed one under the same name.
			r, err = newReplayer(func(reg workflows.Registry) {
				workflows.RegisterWorkflows(replacing{reg, map[string]any{tc.workflow: tc.changed}})
			})
			require.NoError(t, err)
			err = r.ReplayWorkflowHistoryFromJSONFile(silent, path)
			require.Error(t, err, "replaying %s against %s", path, tc.name)
			require.ErrorContains(t, err, "TMPRL1100", "a nondeterminism error")
			t.Logf("%s: %.300s", path, err)
		})
	}
}

// replacing registers a replacement under a production workflow name, and
// everything else as given.
type replacing struct {
	workflows.Registry
	by map[string]any
}

func (r replacing) RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions) {
	if changed, ok := r.by[options.Name]; ok {
		w = changed
	}
	r.Registry.RegisterWorkflowWithOptions(w, options)
}

func latest(t *testing.T, name string) Fixture {
	t.Helper()
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	var found *Fixture
	for i := range fixtures {
		if fixtures[i].Name() == name {
			found = &fixtures[i]
		}
	}
	require.NotNil(t, found, "no fixture %s", name)
	return *found
}

// act names the activities, as in package workflows.
var act *activities.Activities

func guardOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
}

// switchWithoutClaim is Switch with step 2, the claim, left out: the bug
// that lets a release remove the finalizer of a config a switch is about to
// write.
func switchWithoutClaim(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	ctx = guardOptions(ctx)
	var check activities.TargetCheck
	if err := workflow.ExecuteActivity(ctx, act.Protect, activities.ProtectInput{Config: in.To, Class: in.Class}).Get(ctx, &check); err != nil {
		return nil, err
	}
	var live *resolve.Config
	if err := workflow.ExecuteActivity(ctx, act.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	return settle(ctx, in)
}

// switchReadBeforeClaim is Switch with steps 2 and 3 swapped: the live read
// before the claim, which misses a deletion that races the claim.
func switchReadBeforeClaim(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	ctx = guardOptions(ctx)
	var check activities.TargetCheck
	if err := workflow.ExecuteActivity(ctx, act.Protect, activities.ProtectInput{Config: in.To, Class: in.Class}).Get(ctx, &check); err != nil {
		return nil, err
	}
	var live *resolve.Config
	if err := workflow.ExecuteActivity(ctx, act.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	var claim activities.PoolWrite
	if err := workflow.ExecuteActivity(ctx, act.Claim, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.To}).Get(ctx, &claim); err != nil {
		return nil, err
	}
	return settle(ctx, in)
}

func settle(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	var w activities.PoolWrite
	if err := workflow.ExecuteActivity(ctx, act.Confirm, activities.SettleInput{Pool: in.Pool, Class: in.Class, Config: in.To}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteActivity(ctx, act.RecordEvent, activities.EventInput{Pool: in.Pool, Note: fmt.Sprintf("to %s", in.To)}).Get(ctx, nil); err != nil {
		return nil, err
	}
	return &workflows.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, nil
}

// releaseLiveFirst is Release with the cache check and the live list
// swapped.
func releaseLiveFirst(ctx workflow.Context, in wfapi.ReleaseInput) (string, error) {
	ctx = guardOptions(ctx)
	var c *resolve.Config
	if err := workflow.ExecuteActivity(ctx, act.ReadConfig, in.Config).Get(ctx, &c); err != nil {
		return "", err
	}
	var users []string
	if err := workflow.ExecuteActivity(ctx, act.LiveUsers, in.Config).Get(ctx, &users); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, act.CachedUsers, in.Config).Get(ctx, &users); err != nil {
		return "", err
	}
	var removed string
	if err := workflow.ExecuteActivity(ctx, act.Unprotect, in.Config).Get(ctx, &removed); err != nil {
		return "", err
	}
	return wfapi.OutcomeReleased, nil
}
