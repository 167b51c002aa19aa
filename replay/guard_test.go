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
		version       int
		workflow      string
		changed       any
	}{
		{"a switch that skips the claim", "switch-confirmed", 1, wfapi.SwitchWorkflow, switchWithoutClaim},
		{"a switch that reads before it claims", "switch-confirmed", 1, wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a running switch that reads before it claims", "switch-open-at-read", 1, wfapi.SwitchWorkflow, switchReadBeforeClaim},
		{"a release that lists live before asking the cache", "release-at-once", 1, wfapi.ReleaseWorkflow, releaseLiveFirst},
		// The switch with local steps (v2): a local step leaves a marker that
		// replay matches like any other command.
		{"a switch with local steps that skips the claim", "switch-confirmed", 2, wfapi.SwitchWorkflow, localSwitchWithoutClaim},
		{"a switch with local steps that skips the local protect", "switch-confirmed", 2, wfapi.SwitchWorkflow, localSwitchWithoutProtect},
		{"a running switch with local steps that reads before it claims", "switch-open-at-claim", 2, wfapi.SwitchWorkflow, localSwitchReadBeforeClaim},
		{"a switch that claims in a local activity", "switch-confirmed", 2, wfapi.SwitchWorkflow, localSwitchLocalClaim},
		{"a release that lists live before asking the cache, v2", "release-at-once", 2, wfapi.ReleaseWorkflow, releaseLiveFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fixtureAt(t, tc.fixture, tc.version).Path

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

func fixtureAt(t *testing.T, name string, version int) Fixture {
	t.Helper()
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	for _, fx := range fixtures {
		if fx.Name() == name && fx.Version == version {
			return fx
		}
	}
	t.Fatalf("no fixture %s.v%d", name, version)
	return Fixture{}
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

func guardLocal(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second})
}

// localProtect is the switch with local steps as far as its first step:
// the version it records and its local Protect.
func localProtect(ctx workflow.Context, in workflows.SwitchInput) error {
	workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1)
	var check activities.TargetCheck
	return workflow.ExecuteLocalActivity(guardLocal(ctx), act.Protect, activities.ProtectInput{Config: in.To, Class: in.Class}).Get(ctx, &check)
}

func localRead(ctx workflow.Context, in workflows.SwitchInput) error {
	var live *resolve.Config
	return workflow.ExecuteLocalActivity(guardLocal(ctx), act.ReadConfig, in.To).Get(ctx, &live)
}

func claim(ctx workflow.Context, in workflows.SwitchInput) error {
	var claim activities.PoolWrite
	return workflow.ExecuteActivity(guardOptions(ctx), act.Claim, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.To}).Get(ctx, &claim)
}

// localSettle is settle with the event recorded by a local activity.
func localSettle(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	var w activities.PoolWrite
	if err := workflow.ExecuteActivity(guardOptions(ctx), act.Confirm, activities.SettleInput{Pool: in.Pool, Class: in.Class, Config: in.To}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.RecordEvent, activities.EventInput{Pool: in.Pool, Note: fmt.Sprintf("to %s", in.To)}).Get(ctx, nil); err != nil {
		return nil, err
	}
	return &workflows.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, nil
}

// localSwitchWithoutClaim is the switch with local steps, without the claim.
func localSwitchWithoutClaim(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	if err := localProtect(ctx, in); err != nil {
		return nil, err
	}
	if err := localRead(ctx, in); err != nil {
		return nil, err
	}
	return localSettle(ctx, in)
}

// localSwitchWithoutProtect leaves out a local step, the finalizer: a claim
// could then name a config nothing protects (P1).
func localSwitchWithoutProtect(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1)
	if err := claim(ctx, in); err != nil {
		return nil, err
	}
	if err := localRead(ctx, in); err != nil {
		return nil, err
	}
	return localSettle(ctx, in)
}

// localSwitchReadBeforeClaim is the switch with local steps, its live read
// moved before the claim.
func localSwitchReadBeforeClaim(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	if err := localProtect(ctx, in); err != nil {
		return nil, err
	}
	if err := localRead(ctx, in); err != nil {
		return nil, err
	}
	if err := claim(ctx, in); err != nil {
		return nil, err
	}
	return localSettle(ctx, in)
}

// localSwitchLocalClaim runs the claim as a local activity: the same steps
// in the same order, but not the same commands.
func localSwitchLocalClaim(ctx workflow.Context, in workflows.SwitchInput) (*workflows.SwitchResult, error) {
	if err := localProtect(ctx, in); err != nil {
		return nil, err
	}
	var claim activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(guardLocal(ctx), act.Claim, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.To}).Get(ctx, &claim); err != nil {
		return nil, err
	}
	if err := localRead(ctx, in); err != nil {
		return nil, err
	}
	return localSettle(ctx, in)
}
