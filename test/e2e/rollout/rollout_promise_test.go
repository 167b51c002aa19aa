package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	tworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// userGate is a gate workflow of the user's, CheckSandboxes on a task
// queue of its own: it fails while failing is set, blocks (until
// cancelled) while blocking is set, and keeps what each run was told by
// run ID (a replay writes the same entry again).
type userGate struct {
	queue              string
	failing, blocking  atomic.Bool
	told               sync.Map
	cancelled, started atomic.Int32
}

func startUserGate(t *testing.T, p *producttest.Product) *userGate {
	t.Helper()
	g := &userGate{queue: "checks-" + p.Scope().TaskQueue}
	w := tworker.New(p.TemporalClient(), g.queue, tworker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, in wfapi.GateInput) error {
		g.told.Store(workflow.GetInfo(ctx).WorkflowExecution.RunID, in)
		var mode gateMode
		if err := workflow.SideEffect(ctx, func(workflow.Context) any {
			g.started.Add(1)
			return gateMode{Fail: g.failing.Load(), Block: g.blocking.Load()}
		}).Get(&mode); err != nil {
			return err
		}
		if mode.Block {
			err := workflow.Await(ctx, func() bool { return false })
			if temporal.IsCanceledError(err) {
				g.cancelled.Add(1) // the test's own gate: a replay may count again
			}
			return err
		}
		if mode.Fail {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sandboxes of %v do not start", in.Pools), "CheckFailed", nil)
		}
		return nil
	}, workflow.RegisterOptions{Name: "CheckSandboxes"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return g
}

type gateMode struct{ Fail, Block bool }

func (g *userGate) spec() *v1alpha1.RolloutGate {
	return &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: g.queue}
}

// runs lists what the gate's runs were told, by step.
func (g *userGate) runs() []wfapi.GateInput {
	var out []wfapi.GateInput
	g.told.Range(func(_, v any) bool { out = append(out, v.(wfapi.GateInput)); return true })
	slices.SortFunc(out, func(a, b wfapi.GateInput) int { return int(a.Step - b.Step) })
	return out
}

// TestAHaltOutlivesANewRun (issue 45, items 7 and 2): a rollout halted by
// its gate, superseded by a newer default which is then deleted, comes
// back Halted in its new run: it does not retake the step and pass the
// failed gate with no one's decision (v0.1.0 did). Resumed with the
// annotation, the retaken step's gate is told the step's pools again.
func TestAHaltOutlivesANewRun(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 4, 1)
	g := startUserGate(t, p)
	g.failing.Store(true)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, g.spec(), producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "new", "halted by its gate", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })

	// The gate would pass now: only a decision may let the rollout on.
	g.failing.Store(false)
	newer := producttest.RolloutConfig("newer", true, nil, producttest.Step(100, true, 0))
	p.CreateAfterOthers(t, newer)
	p.WaitForRollout(t, "new", "superseded", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutSuperseded })
	require.NoError(t, kube.Delete(ctx, newer))
	p.WaitGone(t, newer)
	st := p.WaitForRollout(t, "new", "halted again in a new run", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	require.Contains(t, st.Message, "gate workflow CheckSandboxes failed")
	producttest.RequireStays(t, 3*time.Second, "the new run holds the halt: no gate, no move", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return slices.Equal(on, keys(ns, "p01")) && g.started.Load() == 1, fmt.Sprintf("on new %v, gate runs %d", on, g.started.Load())
	})

	producttest.RequestResume(t, kube, "new", "after-the-fix")
	p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	runs := g.runs()
	require.Equal(t, []wfapi.GateInput{
		{Config: "new", Step: 1, Pools: keys(ns, "p01")},
		{Config: "new", Step: 1, Pools: keys(ns, "p01")},
		{Config: "new", Step: 2, Pools: keys(ns, "p00", "p02", "p03")},
	}, runs, "each run of the gate was told its step's pools")
}

// TestARecreatedConfigStartsOver (issue 45, item 5): a config deleted and
// created again under its name, paused, while its rollout bakes, starts
// over: step 0, Paused, nothing admitted, no pool on it; v0.1.0's run went
// on with the old incarnation's steps and never applied the pause.
func TestARecreatedConfigStartsOver(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 4, 2)

	first := producttest.RolloutConfig("new", false, nil, producttest.Step(1, false, time.Hour), producttest.Step(100, true, 0))
	p.CreateAfterOthers(t, first)
	p.WaitForRollout(t, "new", "baking step 1", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutBaking })
	require.NoError(t, kube.Delete(ctx, first))
	p.WaitGone(t, first)
	p.WaitForConfig(t, ns, "p02", "old", metav1.ConditionTrue)

	again := producttest.RolloutConfig("new", true, nil, producttest.Step(1, false, time.Hour), producttest.Step(100, true, 0))
	p.CreateAfterOthers(t, again)
	st := p.WaitForRollout(t, "new", "paused before its first step", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutPaused
	})
	require.Zero(t, st.Step)
	require.Nil(t, st.AdmittedThrough)
	require.Empty(t, st.AdmittedCanaries)
	require.Equal(t, []int32{0, 0, 4}, []int32{st.AdmittedPools, st.MovedPools, st.TotalPools})
	producttest.RequireStays(t, 3*time.Second, "no pool moves to the paused config", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 0, fmt.Sprint(on)
	})
}

// TestShorteningTheStepsHolds (issue 45, item 9): cutting the steps to
// "hold at 10%" mid-rollout holds the rollout after the last remaining
// step (Paused, saying why) and moves nothing more; v0.1.0 wrote Completed
// and moved every pool. Adding the 100% step back completes it.
func TestShorteningTheStepsHolds(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 10, 0)

	steps := []v1alpha1.RolloutStep{producttest.Step(1, false, 0), producttest.Step(20, true, 2*time.Second), producttest.Step(100, true, 0)}
	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, nil, steps...))
	p.WaitForRollout(t, "new", "baking step 2", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking
	})
	setSteps := func(steps []v1alpha1.RolloutStep) {
		t.Helper()
		// The product writes the config's status meanwhile: read again on
		// a conflict, as kubectl edit asks its user to.
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var c v1alpha1.SandboxConfig
			if err := kube.Get(ctx, client.ObjectKey{Name: "new"}, &c); err != nil {
				return err
			}
			c.Spec.Rollout.Steps = steps
			return kube.Update(ctx, &c)
		}))
	}
	setSteps(steps[:2])
	st := p.WaitForRollout(t, "new", "holding after its last step", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutPaused
	})
	require.Equal(t, "holding after its last step (2): its steps admit 2 of 10 pools; add a step to go on", st.Message)
	producttest.RequireStays(t, 3*time.Second, "no pool beyond the edited steps moves", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 2, fmt.Sprint(on)
	})

	setSteps(steps)
	st = p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.Equal(t, []int32{10, 10, 10}, []int32{st.AdmittedPools, st.MovedPools, st.TotalPools})
}

// TestAStopIsHeardWhileTheGateRuns (issue 45, item 4): a gate that never
// ends (as on a task queue with a typo) does not deafen the rollout:
// removing the class-default annotation stops it at once (Stopped, the
// gate cancelled), where v0.1.0 read "gate workflow running" for good.
func TestAStopIsHeardWhileTheGateRuns(t *testing.T) {
	p := producttest.Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 3, 0)
	g := startUserGate(t, p)
	g.blocking.Store(true)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, g.spec(), producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	producttest.Eventually(t, "the gate running", func() (bool, string) {
		return g.started.Load() == 1, fmt.Sprint(g.started.Load())
	})
	producttest.SetDefault(t, kube, "new", false)
	st := p.WaitForRollout(t, "new", "stopped", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutStopped })
	require.Contains(t, st.Message, "no longer annotated")
	producttest.Eventually(t, "the gate cancelled", func() (bool, string) {
		return g.cancelled.Load() >= 1, fmt.Sprint(g.cancelled.Load())
	})
	p.WaitForConfig(t, ns, "p00", "old", metav1.ConditionTrue)
}

// TestTheCRDRefusesAGateOfTheOrchestrators (issue 45, item 11): the API
// server refuses a gate that names a workflow type or a task queue of the
// orchestrator's own, or a timeout that is no duration, with a message
// naming the field; a gate of the user's is accepted.
func TestTheCRDRefusesAGateOfTheOrchestrators(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		gate    v1alpha1.RolloutGate
		refused string
	}{
		{"the switch", v1alpha1.RolloutGate{WorkflowType: wfapi.SwitchWorkflow, TaskQueue: "checks"}, "spec.rollout.gate.workflowType"},
		{"the operator", v1alpha1.RolloutGate{WorkflowType: wfapi.OperatorWorkflow, TaskQueue: "checks"}, "spec.rollout.gate.workflowType"},
		{"the cluster's queue", v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "ate-orchestrator-prod"}, "spec.rollout.gate.taskQueue"},
		{"a timeout that is no duration", v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks",
			Timeout: &metav1.Duration{Duration: -time.Minute}}, "spec.rollout.gate.timeout"},
		{"the user's", v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks", Timeout: &metav1.Duration{Duration: time.Hour}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := producttest.RolloutConfig(testenv.UniqueName(t), false, &tc.gate, producttest.Step(100, true, 0))
			c.Annotations = nil // not a default: nothing runs it
			err := env.Kube.Create(ctx, c)
			if tc.refused == "" {
				require.NoError(t, err)
				require.NoError(t, env.Kube.Delete(ctx, c))
				return
			}
			require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.refused)
		})
	}
}
