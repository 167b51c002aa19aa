package replay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// TestReplayCatchesIncompatibleChanges proves the replay test can fail:
// every recorded history of a kind, replayed against a small changed
// workflow registered under that kind's production name, fails, where
// TestReplay replays the same histories with the product's code. Were the
// replayer not to look at the commands, these would pass and TestReplay
// would prove nothing.
//
// Each changed workflow is a few lines, not a copy of the product, and
// differs from it at its first command: a switch starts with its first
// Protect (a local activity) or, started by an operator, with a search
// attribute upsert and a regular Observe; a release with its ReadConfig; the
// operator workflow with nothing (it waits for a signal).
// So each fails against every history of its kind, whatever the rest of
// the product's steps are. The activities are named by their registered
// names: a replay never runs them, and matches the type and the kind
// (local or regular) of each command against the history, not its input.
func TestReplayCatchesIncompatibleChanges(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, kind string
		changed    any
	}{
		{"a switch that reads before it claims", "switch", switchReadsFirst},
		{"a switch that claims in a regular activity", "switch", switchRegularClaim},
		{"a switch that confirms without claiming", "switch", switchConfirmsFirst},
		{"a switch that does nothing", "switch", switchDoesNothing},
		{"a release that unprotects before it asks the cache", "release", releaseUnprotectsFirst},
		{"an operator that runs a request before any signal", "operator", operatorRequestsFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, fx := range fixtures {
				if fx.Kind != tc.kind {
					continue
				}
				n++
				r, err := newReplayer(func(reg workflows.Registry) {
					workflows.RegisterWorkflows(replacing{reg, map[string]any{fx.WorkflowType(): tc.changed}})
				})
				require.NoError(t, err)
				err = ReplayFixture(r, silent, fx)
				require.Error(t, err, "replaying %s against %s", fx.Path, tc.name)
				require.Regexp(t, nondeterminism, err.Error(), "%s: a nondeterminism error", fx.Path)
				t.Logf("%s: %.200s", fx.Path, err)
			}
			require.NotZero(t, n, "no %s fixture", tc.kind)
		})
	}
}

// nondeterminism is what the replayer reports for code that does not issue
// the recorded commands: the SDK's nondeterminism error, or, for a history
// whose only completed workflow task ended the run (a continue-as-new), that
// the code does not end it the same way.
const nondeterminism = `\[TMPRL1100\]|doesn't return the same result as the last event`

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

func local(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
}

func regular(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
}

// switchReadsFirst reads the target live (a local ReadConfig) before it
// protects or claims it.
func switchReadsFirst(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	err := workflow.ExecuteLocalActivity(local(ctx), "ReadConfig", in.To).Get(ctx, nil)
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, err
}

// switchRegularClaim claims in a regular activity, where the switch's
// steps are local.
func switchRegularClaim(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	err := workflow.ExecuteActivity(regular(ctx), "Claim", in.To).Get(ctx, nil)
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, err
}

// switchConfirmsFirst writes the target into the class with no protection
// and no claim before it.
func switchConfirmsFirst(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	err := workflow.ExecuteLocalActivity(local(ctx), "Confirm", in.To).Get(ctx, nil)
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed}, err
}

// switchDoesNothing ends at once: no step, no search attribute, no memo.
func switchDoesNothing(workflow.Context, wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	return &wfapi.SwitchResult{Outcome: wfapi.OutcomeUpToDate}, nil
}

// releaseUnprotectsFirst removes the finalizer (the step that lists the
// config's users live) before it reads the config or asks the cache.
func releaseUnprotectsFirst(ctx workflow.Context, in wfapi.ReleaseInput) (string, error) {
	err := workflow.ExecuteActivity(regular(ctx), "Unprotect", in.Config).Get(ctx, nil)
	return wfapi.OutcomeReleased, err
}
