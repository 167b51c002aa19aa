package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

var (
	errorRate = v1alpha1.RolloutMetric{Name: "errors", Query: `sum(rate(errors{pool=~"{{.Pools}}"}[1m]))`, Max: ptr.To("0.1")}
	complete  = rollout.Verdict{Action: rollout.Complete, Phase: v1alpha1.RolloutCompleted, Message: "all 1 steps done", UID: "uid-1", Done: 1}
)

func measured(phase v1alpha1.MeasurementPhase, value, msg string) []rollout.Measurement {
	return []rollout.Measurement{{Metric: "errors", Phase: phase, Value: value, Message: msg}}
}

var (
	good        = measured(v1alpha1.MeasurementSuccessful, "0.01", "")
	bad         = measured(v1alpha1.MeasurementFailed, "0.3", "metric errors is 0.3, above its max 0.1")
	noData      = measured(v1alpha1.MeasurementInconclusive, "", "no data: the query returned no series")
	rolledBackV = rollout.Verdict{Action: rollout.Hold, Phase: v1alpha1.RolloutRolledBack, Message: "rolled back", UID: "uid-1"}
)

// analysisEnv runs the rollout of "new" through one step of a 10-minute
// bake with the given analysis and onFailure; its measurements answer the
// rounds in turn (the last one again once they run out). It returns the
// status writes, the rounds taken (their times and failures before), and
// the events recorded.
func analysisEnv(t *testing.T, an *v1alpha1.RolloutAnalysis, onFailure v1alpha1.RolloutFailurePolicy, rounds [][]rollout.Measurement, verdicts ...rollout.Verdict) (
	run func(), writes *[]activities.RolloutStatusInput, asked *[]activities.MeasureInput, reasons *[]string) {
	t.Helper()
	reasons = &[]string{}
	env, writes := rolloutEnvWithEvents(t, reasons, verdicts...)
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Admitted: 1, Total: 4, Pause: 10 * time.Minute,
			Class: "gvisor", Analysis: an, OnFailure: onFailure}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).Return(&activities.StepWait{Outcome: activities.StepReady}, nil)
	asked = &[]activities.MeasureInput{}
	env.OnActivity(act.MeasureRollout, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.MeasureInput) ([]rollout.Measurement, error) {
		*asked = append(*asked, in)
		return rounds[min(len(*asked)-1, len(rounds)-1)], nil
	})
	// A recheck long after: a rollout held (rolled back, halted) looks
	// again and ends on the verdicts' last.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, 5*time.Hour)
	run = func() {
		env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
	}
	return run, writes, asked, reasons
}

func analysis(limit int32) *v1alpha1.RolloutAnalysis {
	return &v1alpha1.RolloutAnalysis{Metrics: []v1alpha1.RolloutMetric{errorRate}, FailureLimit: limit}
}

// lastWithPhase is the last write of phase p: for RolledBack and Halted,
// the one that recorded the failure (its abort or halt), not a hold's.
func lastWithPhase(writes []activities.RolloutStatusInput, p v1alpha1.RolloutPhase) *activities.RolloutStatusInput {
	for i := len(writes) - 1; i >= 0; i-- {
		w := &writes[i]
		switch {
		case w.Phase != p:
		case p == v1alpha1.RolloutRolledBack && w.Abort == nil, p == v1alpha1.RolloutHalted && w.Halt == nil:
		default:
			return w
		}
	}
	return nil
}

// TestAnalysisOutOfBoundsRollsBack: a measurement out of bounds during the
// bake, with onFailure RollBack, ends the bake at once and records a
// rollback: an abort of the rollout's own (rolledBack, at the spec's
// generation) with the step, the metric and its value, and a Warning
// RolloutRolledBack. Without the rollback (r.fail halting) or without the
// analysis waking the bake, this fails.
func TestAnalysisOutOfBoundsRollsBack(t *testing.T) {
	run, writes, asked, reasons := analysisEnv(t, analysis(0), v1alpha1.RolloutOnFailureRollBack,
		[][]rollout.Measurement{good, good, bad}, takeStep1, rolledBackV, stopped)
	run()
	rb := lastWithPhase(*writes, v1alpha1.RolloutRolledBack)
	require.NotNil(t, rb, "a rollback written: %+v", *writes)
	require.NotNil(t, rb.Abort)
	require.True(t, rb.Abort.RolledBack)
	require.Equal(t, int32(1), rb.Abort.Step)
	require.Equal(t, int64(1), rb.Abort.Generation)
	require.Contains(t, rb.Message, "step 1: analysis failed: metric errors is 0.3, above its max 0.1 (1 measurements out of bounds, more than its failureLimit 0)")
	require.Contains(t, *reasons, v1alpha1.EventReasonRolloutRolledBack)
	require.Nil(t, lastWithPhase(*writes, v1alpha1.RolloutHalted), "no halt")
	require.Len(t, *asked, 3, "rounds at 0, 30s and 60s: the third failed the step")
	require.Equal(t, 30*time.Second, (*asked)[1].At.Sub((*asked)[0].At), "the default interval")
	require.Equal(t, activities.MeasureInput{Config: "new", UID: "uid-1", Class: "gvisor", Step: 1, Pools: []string{"ns/c"},
		Metrics: []v1alpha1.RolloutMetric{errorRate}, At: (*asked)[0].At}, (*asked)[0])
}

// TestAnalysisOutOfBoundsHaltsByDefault: the same failure without
// onFailure halts, as every failed step did before.
func TestAnalysisOutOfBoundsHaltsByDefault(t *testing.T) {
	run, writes, _, reasons := analysisEnv(t, analysis(0), "", [][]rollout.Measurement{bad},
		takeStep1, rollout.Verdict{Action: rollout.Hold, Phase: v1alpha1.RolloutHalted, UID: "uid-1"}, stopped)
	run()
	h := lastWithPhase(*writes, v1alpha1.RolloutHalted)
	require.NotNil(t, h, "a halt written: %+v", *writes)
	require.NotNil(t, h.Halt)
	require.Nil(t, h.Abort)
	require.Contains(t, h.Message, "analysis failed: metric errors is 0.3")
	require.Contains(t, *reasons, v1alpha1.EventReasonRolloutHalted)
	require.Nil(t, lastWithPhase(*writes, v1alpha1.RolloutRolledBack))
}

// TestAnalysisFailureLimitBearsFailures: with failureLimit 2, two
// measurements out of bounds in the step are borne; the step completes.
// The second round is told the first's failure, for status.
func TestAnalysisFailureLimitBearsFailures(t *testing.T) {
	run, writes, asked, _ := analysisEnv(t, analysis(2), v1alpha1.RolloutOnFailureRollBack,
		[][]rollout.Measurement{bad, bad, good}, takeStep1, complete)
	run()
	require.NotNil(t, lastWithPhase(*writes, v1alpha1.RolloutCompleted), "completed: %+v", *writes)
	require.Nil(t, lastWithPhase(*writes, v1alpha1.RolloutRolledBack))
	require.Equal(t, map[string]int32{"errors": 1}, (*asked)[1].Failures)
	require.Greater(t, len(*asked), 3, "measured through the bake and once at its end")
}

// TestInconclusiveAnalysisHoldsTheStep: a step whose last measurement has
// no data does not complete: it holds, says so, and completes once a
// measurement answers.
func TestInconclusiveAnalysisHoldsTheStep(t *testing.T) {
	rounds := make([][]rollout.Measurement, 0, 30)
	for range 25 { // 0s..10m in the bake (21 rounds), then 4 more held
		rounds = append(rounds, noData)
	}
	rounds = append(rounds, good)
	run, writes, asked, _ := analysisEnv(t, analysis(0), "", rounds, takeStep1, complete)
	run()
	require.NotNil(t, lastWithPhase(*writes, v1alpha1.RolloutCompleted), "completed: %+v", *writes)
	require.Len(t, *asked, 26)
	var held bool
	for _, w := range *writes {
		held = held || w.Phase == v1alpha1.RolloutProgressing && strings.Contains(w.Message, "holding: its analysis is inconclusive: metric errors inconclusive: no data")
	}
	require.True(t, held, "the hold said why: %+v", *writes)
}

// TestInconclusiveAnalysisFailsAtTheDeadline: an analysis with no data
// past the step deadline (an hour in rolloutEnv) fails the step as
// onFailure says.
func TestInconclusiveAnalysisFailsAtTheDeadline(t *testing.T) {
	run, writes, _, _ := analysisEnv(t, analysis(0), v1alpha1.RolloutOnFailureRollBack, [][]rollout.Measurement{noData},
		takeStep1, rolledBackV, stopped)
	run()
	rb := lastWithPhase(*writes, v1alpha1.RolloutRolledBack)
	require.NotNil(t, rb, "rolled back: %+v", *writes)
	require.Contains(t, rb.Message, "step 1: its analysis stayed inconclusive for 1h0m0s (the step deadline): metric errors inconclusive: no data")
}

// TestAFailingSwitchRollsBack: onFailure applies to every failure of a
// step, a failing switch included.
func TestAFailingSwitchRollsBack(t *testing.T) {
	env, writes := rolloutEnv(t, takeStep1, rolledBackV, stopped)
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Admitted: 1, Total: 4, OnFailure: v1alpha1.RolloutOnFailureRollBack}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.StepWait{Outcome: activities.StepHalted, Pool: "ns/c", Message: "step 1: pool ns/c's switch failed"}, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(wfapi.SignalRecheck, nil) }, 5*time.Hour)
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	rb := lastWithPhase(*writes, v1alpha1.RolloutRolledBack)
	require.NotNil(t, rb, "rolled back: %+v", *writes)
	require.Contains(t, rb.Message, "pool ns/c's switch failed")
}

// TestTheGateIsGivenItsInput: spec.rollout.gate.input reaches the gate as
// written, next to config, step and pools.
func TestTheGateIsGivenItsInput(t *testing.T) {
	env, _ := rolloutEnv(t, takeStep1, complete)
	gate := &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks",
		Input: &runtime.RawExtension{Raw: []byte(`{"slo":"99.9"}`)}}
	env.OnActivity(act.AdmitRolloutStep, mock.Anything, mock.Anything).
		Return(&activities.Admitted{Pools: []string{"ns/c"}, Admitted: 1, Total: 1, Gate: gate, GateTimeout: time.Hour}, nil)
	env.OnActivity(act.WaitRolloutStep, mock.Anything, mock.Anything).Return(&activities.StepWait{Outcome: activities.StepReady}, nil)
	var told wfapi.GateInput
	env.RegisterWorkflowWithOptions(func(_ workflow.Context, in wfapi.GateInput) error {
		told = in
		return nil
	}, workflow.RegisterOptions{Name: "CheckSandboxes"})
	env.ExecuteWorkflow(wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "new"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.JSONEq(t, `{"slo":"99.9"}`, string(told.Input))
	require.Equal(t, []string{"ns/c"}, told.Pools)
}
