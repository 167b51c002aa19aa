package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestRolloutSignals: the starter's pause and resume carry the config's
// generation and act only on a change of spec.rollout.paused (so another
// spec edit does not resume a halted rollout, and a stale signal is
// ignored); an operator's (no generation) always acts.
func TestRolloutSignals(t *testing.T) {
	type sig struct {
		pause      bool
		generation int64
	}
	for _, tc := range []struct {
		name           string
		start          rolloutRun
		signals        []sig
		paused, halted bool
		specPaused     bool
		generation     int64
		lastActed      bool
	}{
		{"spec pauses", rolloutRun{generation: 1}, []sig{{true, 2}}, true, false, true, 2, true},
		{"spec resumes a halt when paused is toggled", rolloutRun{generation: 1, halted: true},
			[]sig{{true, 2}, {false, 3}}, false, false, false, 3, true},
		{"another spec edit does not resume a halt", rolloutRun{generation: 1, halted: true},
			[]sig{{false, 2}}, false, true, false, 2, false},
		{"a stale signal is ignored", rolloutRun{generation: 5, specPaused: true, paused: true},
			[]sig{{false, 4}}, true, false, true, 5, false},
		{"an operator's pause holds until the spec's next change", rolloutRun{generation: 2},
			[]sig{{true, 0}, {false, 3}}, true, false, false, 3, false},
		{"an operator's resume clears a halt", rolloutRun{generation: 2, halted: true},
			[]sig{{false, 0}}, false, false, false, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.start
			acted := false
			for _, s := range tc.signals {
				acted = r.apply(s.pause, s.generation)
			}
			require.Equal(t, tc.paused, r.paused, "paused")
			require.Equal(t, tc.halted, r.halted, "halted")
			require.Equal(t, tc.specPaused, r.specPaused, "specPaused")
			require.Equal(t, tc.generation, r.generation, "generation taken in")
			require.Equal(t, tc.lastActed, acted, "the last signal acted")
			// A status write is due when the generation or the hold changed.
			require.Equal(t, tc.generation != tc.start.generation || acted, r.dirty, "dirty")
		})
	}
}

// rolloutEnv is a test environment running the rollout of "new" whose
// looks answer the verdicts in turn (the last one again once they run out),
// recording every status write.
func rolloutEnv(t *testing.T, verdicts ...rollout.Verdict) (*testsuite.TestWorkflowEnvironment, *[]activities.RolloutStatusInput) {
	t.Helper()
	return rolloutEnvWithEvents(t, &[]string{}, verdicts...)
}

// rolloutEnvWithEvents is rolloutEnv recording the reason of every event
// in reasons.
func rolloutEnvWithEvents(t *testing.T, reasons *[]string, verdicts ...rollout.Verdict) (*testsuite.TestWorkflowEnvironment, *[]activities.RolloutStatusInput) {
	t.Helper()
	return rolloutEnvKeeping(t, reasons, func(activities.KeepCountsInput) string { return activities.CountsGone }, verdicts...)
}

// rolloutEnvKeeping is rolloutEnvWithEvents whose KeepRolloutCounts
// returns what keep says (the test environment skips time only while no
// activity runs: one that ran until cancelled would hold the clock).
func rolloutEnvKeeping(t *testing.T, reasons *[]string, keep func(activities.KeepCountsInput) string, verdicts ...rollout.Verdict) (
	*testsuite.TestWorkflowEnvironment, *[]activities.RolloutStatusInput) {
	t.Helper()
	env, _ := newEnv(t)
	env.OnActivity(act.KeepRolloutCounts, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.KeepCountsInput) (string, error) {
		return keep(in), nil
	})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.RolloutWorkflowID("new")})
	looks := 0
	env.OnActivity(act.LookAtRollout, mock.Anything, mock.Anything).Return(func(context.Context, activities.LookInput) (*activities.RolloutLook, error) {
		v := verdicts[min(looks, len(verdicts)-1)]
		looks++
		return &activities.RolloutLook{Exists: true, Generation: 1, Deadline: time.Hour, Verdict: v}, nil
	})
	writes := &[]activities.RolloutStatusInput{}
	env.OnActivity(act.SetRolloutStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RolloutStatusInput) error {
		*writes = append(*writes, in)
		return nil
	})
	env.OnActivity(act.RecordRolloutEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RolloutEventInput) error {
		*reasons = append(*reasons, in.Reason)
		return nil
	})
	return env, writes
}

func phases(writes []activities.RolloutStatusInput) []v1alpha1.RolloutPhase {
	var out []v1alpha1.RolloutPhase
	for _, w := range writes {
		if w.Phase != "" {
			out = append(out, w.Phase)
		}
	}
	return out
}

var (
	takeStep1 = rollout.Verdict{Action: rollout.Take, Step: 1, UID: "uid-1"}
	stopped   = rollout.Verdict{Action: rollout.End, Phase: v1alpha1.RolloutStopped, Write: true, Message: "no longer annotated", UID: "uid-1"}
)

// TestRolloutHearsAStopWhileItsGateRuns (issue 45, item 4): a recheck while
// the gate runs looks at once; a verdict that ends the rollout cancels the
// gate and ends it Stopped, where v0.1.0 heard nothing until the gate ended.
// The gate was given the step's pools.
func TestRolloutHearsAStopWhileItsGateRuns(t *testing.T) {
	env, writes := rolloutEnv(t, takeStep1, stopped)
	gate := &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks"}
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Admitted: 1, Total: 4, Gate: gate, GateTimeout: time.Hour}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).Return(&activities.StepWait{Outcome: activities.StepReady}, nil)
	var told wfapi.GateInput
	cancelled := false
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in wfapi.GateInput) error {
		told = in
		err := workflow.Sleep(ctx, 24*time.Hour)
		cancelled = temporal.IsCanceledError(err)
		return err
	}, workflow.RegisterOptions{Name: "CheckSandboxes"})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, time.Minute)

	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res wfapi.RolloutResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, string(v1alpha1.RolloutStopped), res.Phase)
	require.Equal(t, wfapi.GateInput{Config: "new", Step: 1, Pools: []string{"ns/c"}}, told)
	require.True(t, cancelled, "the gate was cancelled")
	require.Equal(t, v1alpha1.RolloutStopped, phases(*writes)[len(phases(*writes))-1])
}

// TestAGateThatNeverEndsHalts (issue 45, item 4): a gate nobody runs (a
// task queue with a typo) halts the step at its timeout, with a message
// naming the queue and a Warning, and the halt is written to status.
func TestAGateThatNeverEndsHalts(t *testing.T) {
	env, writes := rolloutEnv(t, takeStep1, takeStep1, stopped)
	gate := &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "sandbox-chekcs"}
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Gate: gate, GateTimeout: 10 * time.Minute}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).Return(&activities.StepWait{Outcome: activities.StepReady}, nil)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ wfapi.GateInput) error {
		return workflow.Sleep(ctx, 24*time.Hour)
	}, workflow.RegisterOptions{Name: "CheckSandboxes"})
	var halt *activities.RolloutStatusInput
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	for i := range *writes {
		if (*writes)[i].Halt != nil {
			halt = &(*writes)[i]
		}
	}
	require.NotNil(t, halt, "a halt written: %+v", *writes)
	require.Equal(t, v1alpha1.RolloutHalted, halt.Phase)
	require.Contains(t, halt.Message, "gate workflow CheckSandboxes on task queue sandbox-chekcs did not finish within 10m0s")
	require.Equal(t, int32(1), halt.Halt.Step)
}

// TestRolloutStartsOverForANewIncarnation (issue 45, item 5): a look that
// finds the config created again continues as new.
func TestRolloutStartsOverForANewIncarnation(t *testing.T) {
	env, _ := rolloutEnv(t, rollout.Verdict{Action: rollout.StartOver, UID: "uid-2"})
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
}

// TestRolloutRecordsAnOperatorsPauseAndIgnoresAMalformedSignal: a pause
// sent from the CLI is written to status (where a new run finds it); a
// signal whose payload is not a RolloutSignal is logged, taken as a
// recheck, and fails nothing.
func TestRolloutRecordsAnOperatorsPauseAndIgnoresAMalformedSignal(t *testing.T) {
	hold := rollout.Verdict{Action: rollout.Hold, Phase: v1alpha1.RolloutPaused, Message: "paused", UID: "uid-1"}
	env, writes := rolloutEnv(t, hold, hold, hold, stopped)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalResume, "not a RolloutSignal") }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalPause, nil) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, 3*time.Minute)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var paused, resumed int
	for _, w := range *writes {
		if w.SignalPaused != nil && *w.SignalPaused {
			paused++
		}
		if w.ClearHalt {
			resumed++
		}
	}
	require.Equal(t, 1, paused, "the pause signal recorded: %+v", *writes)
	require.Zero(t, resumed, "the malformed resume recorded nothing")
}
