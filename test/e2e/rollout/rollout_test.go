package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	tworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
)

// rolloutFleet creates n unpinned pools on a class default "old" (the one
// at index canary labelled canary), waits for them to be on it, and marks
// their Deployments Available.
func rolloutFleet(t *testing.T, p *producttest.Product, ns string, n, canary int) []string {
	t.Helper()
	ctx := context.Background()
	kube := p.Env.Kube
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("old", true)))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%02d", i)
		wp := producttest.Pool(ns, names[i], "")
		if i == canary {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	for _, name := range names {
		p.WaitForConfig(t, ns, name, "old", metav1.ConditionTrue)
		producttest.SetAvailable(t, kube, ns, name, true)
	}
	return names
}

// warnings keeps the Warning events of events as ConfigEvents gives them:
// a rollout also records Normal ones for each step, pause and resume.
func warnings(events []string) []string {
	return slices.DeleteFunc(slices.Clone(events), func(e string) bool { return !strings.HasPrefix(e, "Warning ") })
}

func keys(ns string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ns + "/" + n
	}
	slices.Sort(out)
	return out
}

// TestStagedRollout is the three-step rollout over 20 pools with
// one canary: created paused, it previews its steps and moves nothing;
// resumed, it moves exactly the canary, then 25% (4 more), then all, each
// step only once the previous step's pools are on it, Available and baked;
// paused in the middle, it holds; resumed, it goes on with the same order.
func TestStagedRollout(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 20, 7)

	const bake = 2 * time.Second
	p.CreateAfterOthers(t, producttest.RolloutConfig("new", true, nil,
		producttest.Step(1, false, bake), producttest.Step(25, true, bake), producttest.Step(100, true, 0)))

	// Paused before the first step: the preview.
	st := p.WaitForRollout(t, "new", "paused at step 0", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutPaused && s.Step == 0
	})
	require.Equal(t, p.Cluster().RolloutWorkflowID("new"), st.WorkflowID)
	plan := p.RolloutPlan(t, "new")
	require.Equal(t, 20, plan.Total)
	require.Empty(t, plan.Admitted)
	require.Len(t, plan.Steps, 3)
	require.Equal(t, keys(ns, "p07"), plan.Steps[0].Pools, "the canary first")
	require.Equal(t, keys(ns, "p00", "p01", "p02", "p03"), plan.Steps[1].Pools, "then by name, up to 25%")
	require.Len(t, plan.Steps[2].Pools, 15)
	producttest.RequireStays(t, 2*time.Second, "no pool moves while the rollout is paused", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 0, fmt.Sprint(on)
	})
	wp := p.WaitForConfig(t, ns, "p00", "old", metav1.ConditionTrue)
	require.Equal(t, resolve.ResolvedMessage("old"), producttest.ResolvedCondition(wp).Message,
		"a pool the rollout has not admitted is honestly Resolved on its config, its status untouched by the rollout")

	// Watch the rollout: a pool moves only once admitted (pools read
	// before the status they must be admitted by), and a step is admitted
	// only after the previous one baked.
	var (
		stop      atomic.Bool
		violation atomic.Value
		stepAt    = map[int32]time.Time{}
		bakingAt  = map[int32]time.Time{}
	)
	watchDone := make(chan struct{})
	t.Cleanup(func() { stop.Store(true); <-watchDone })
	go func() {
		defer close(watchDone)
		admittedBy := map[int32][]string{0: nil, 1: keys(ns, "p07"), 2: keys(ns, "p00", "p01", "p02", "p03", "p07")}
		for !stop.Load() {
			time.Sleep(20 * time.Millisecond) // the watcher's poll interval
			var list v1alpha1.WorkerPoolList
			var c v1alpha1.SandboxConfig
			if kube.List(ctx, &list, client.InNamespace(ns)) != nil || kube.Get(ctx, client.ObjectKey{Name: "new"}, &c) != nil || c.Status.Rollout == nil {
				continue
			}
			var on []string
			for _, wp := range list.Items {
				if st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor); st != nil && st.ConfigRef.NameOf() == "new" {
					on = append(on, ns+"/"+wp.Name)
				}
			}
			s := c.Status.Rollout
			if _, ok := stepAt[s.Step]; !ok {
				stepAt[s.Step] = time.Now()
			}
			if _, ok := bakingAt[s.Step]; !ok && s.Phase == v1alpha1.RolloutBaking {
				bakingAt[s.Step] = time.Now()
			}
			if allowed, ok := admittedBy[s.Step]; ok {
				for _, pool := range on {
					if !slices.Contains(allowed, pool) {
						violation.Store(fmt.Sprintf("%s moved at step %d (%s), before its step", pool, s.Step, s.Phase))
					}
				}
			}
		}
	}()

	producttest.SetPaused(t, kube, "new", false)
	p.WaitForRollout(t, "new", "step 2 baking", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking
	})
	require.Equal(t, keys(ns, "p00", "p01", "p02", "p03", "p07"), producttest.OnConfig(t, kube, ns, "new"))

	// Paused in the middle: step 2's bake ends, and nothing more moves.
	producttest.SetPaused(t, kube, "new", true)
	p.WaitForRollout(t, "new", "paused after step 2", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutPaused
	})
	producttest.RequireStays(t, 3*time.Second, "nothing moves while paused", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 5, fmt.Sprint(on)
	})
	require.Equal(t, keys(ns, "p07"), p.RolloutPlan(t, "new").Done[0].Pools)

	producttest.SetPaused(t, kube, "new", false)
	st = p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutCompleted
	})
	require.Equal(t, int32(3), st.Step)
	require.Equal(t, int32(20), st.TotalPools)
	producttest.Eventually(t, "every pool on new", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 20, fmt.Sprint(len(on))
	})
	stop.Store(true)
	<-watchDone
	if v := violation.Load(); v != nil {
		t.Fatal(v)
	}
	require.GreaterOrEqual(t, stepAt[2].Sub(bakingAt[1]), bake-200*time.Millisecond, "step 2 is admitted only after step 1's bake")
	require.GreaterOrEqual(t, stepAt[3].Sub(bakingAt[2]), bake-200*time.Millisecond, "step 3 is admitted only after step 2's bake")
	plan = p.RolloutPlan(t, "new")
	require.Len(t, plan.Done, 3)
	require.Equal(t, keys(ns, "p00", "p01", "p02", "p03"), plan.Done[1].Pools, "resumed with the same order")
}

// TestStagedRolloutHalts: a failing gate workflow of the user's halts the
// rollout with a Warning and nothing else moves; a resume request (the
// annotation) resumes it, and the retaken step's gate is told the step's
// pools again.
// Then a new default with a rollout supersedes a running one.
func TestStagedRolloutHalts(t *testing.T) {
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	// Steps' pools move within a second here: 5 s is a deadline that only
	// a pool that is not Available misses.
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, RolloutStepDeadline: 5 * time.Second}).Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 6, 3)

	// The user's gate, on its own task queue: it fails until fixed. It
	// keeps what each of its runs was told, by workflow ID (a replay of a
	// run writes the same entry again).
	var fixed atomic.Bool
	var told sync.Map
	gateQueue := "checks-" + p.Scope().TaskQueue
	w := tworker.New(p.TemporalClient(), gateQueue, tworker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, in wfapi.GateInput) error {
		told.Store(workflow.GetInfo(ctx).WorkflowExecution.ID, in)
		var ok bool
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return fixed.Load() }).Get(&ok); err != nil {
			return err
		}
		if !ok {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sandboxes of %v do not start", in.Pools), "CheckFailed", nil)
		}
		return nil
	}, workflow.RegisterOptions{Name: "CheckSandboxes"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, &v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: gateQueue},
		producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	st := p.WaitForRollout(t, "new", "halted by its gate", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutHalted
	})
	require.Contains(t, st.Message, "gate workflow CheckSandboxes failed")
	require.Equal(t, int32(1), st.Step)
	producttest.Eventually(t, "a Warning on the config", func() (bool, string) {
		evs := warnings(p.ConfigEvents(t, "new"))
		return len(evs) == 1 && strings.HasPrefix(evs[0], "Warning RolloutHalted: rollout of SandboxConfig new halted at step 1"), fmt.Sprint(evs)
	})
	producttest.RequireStays(t, 2*time.Second, "nothing else moves while halted", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return slices.Equal(on, keys(ns, "p03")), fmt.Sprint(on)
	})

	// The preview lists what moves once resumed, and what would move back.
	preview, err := starter.Preview(context.Background(), kube, "new")
	require.NoError(t, err)
	require.True(t, preview.Default)
	require.Equal(t, int32(1), preview.Plan.Step)
	require.Equal(t, keys(ns, "p03"), preview.Plan.Admitted)
	require.Len(t, preview.Plan.Steps, 1)
	require.Equal(t, keys(ns, "p00", "p01", "p02", "p04", "p05"), preview.Plan.Steps[0].Pools)
	require.Equal(t, "old", preview.BackTo)
	require.Equal(t, keys(ns, "p03"), preview.Back)
	preview, err = starter.Preview(context.Background(), kube, "old")
	require.NoError(t, err)
	require.False(t, preview.Default, "old is a default, not the newest")
	require.Equal(t, keys(ns, "p00", "p01", "p02", "p04", "p05"), preview.Plan.Admitted, "without spec.rollout: the pools on it")
	require.Equal(t, keys(ns, "p03"), preview.Plan.Steps[0].Pools, "and the rest in one step")

	// The gate was told the step's pool.
	gateRuns := func() map[string]wfapi.GateInput {
		out := map[string]wfapi.GateInput{}
		told.Range(func(k, v any) bool { out[k.(string)] = v.(wfapi.GateInput); return true })
		return out
	}
	id := p.Cluster().RolloutWorkflowID("new")
	require.Equal(t, map[string]wfapi.GateInput{id + "/gate/1-1": {Config: "new", Step: 1, Pools: keys(ns, "p03")}}, gateRuns())

	// The user fixes the check and asks for a resume, as the Warning says.
	fixed.Store(true)
	producttest.RequestResume(t, kube, "new", "1")
	st = p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.Equal(t, "1", st.ResumeRequest, "the request answered")
	require.Nil(t, st.Halt)
	require.Equal(t, []int32{6, 6, 6}, []int32{st.AdmittedPools, st.MovedPools, st.TotalPools}, "counts true at Completed")
	// Step 1 taken again gives its gate the same pool, not an empty list.
	require.Equal(t, map[string]wfapi.GateInput{
		id + "/gate/1-1": {Config: "new", Step: 1, Pools: keys(ns, "p03")},
		id + "/gate/1-2": {Config: "new", Step: 1, Pools: keys(ns, "p03")},
		id + "/gate/2-3": {Config: "new", Step: 2, Pools: keys(ns, "p00", "p01", "p02", "p04", "p05")},
	}, gateRuns())
	producttest.Eventually(t, "every pool on new", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 6, fmt.Sprint(on)
	})

	// An admitted pool that is not Available by the step's deadline halts
	// a rollout too; a newer default with a rollout then supersedes it.
	producttest.SetAvailable(t, kube, ns, "p03", false)
	p.CreateAfterOthers(t, producttest.RolloutConfig("newer", false, nil, producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	st = p.WaitForRollout(t, "newer", "halted: the canary is not Available", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutHalted
	})
	require.Contains(t, st.Message, fmt.Sprintf("WorkerPool %s/p03 is not Available", ns))
	require.Equal(t, keys(ns, "p03"), producttest.OnConfig(t, kube, ns, "newer"))

	p.CreateAfterOthers(t, producttest.RolloutConfig("newest", true, nil, producttest.Step(100, true, 0)))
	st = p.WaitForRollout(t, "newer", "superseded", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutSuperseded
	})
	require.Contains(t, st.Message, `superseded by SandboxConfig "newest"`)
	p.WaitForRollout(t, "newest", "paused", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutPaused })
	wp := p.WaitForConfig(t, ns, "p00", "new", metav1.ConditionTrue)
	require.Equal(t, resolve.ResolvedMessage("new"), producttest.ResolvedCondition(wp).Message)
	wp = p.Get(t, ns, "p03")
	require.Equal(t, "newer", wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor).ConfigRef.NameOf(),
		"the pool the superseded rollout moved stays until the newer one admits it")
	require.NotNil(t, meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionAvailable))
}

// TestStagedRolloutSurvivesRestarts: the worker and the starter stopped
// mid-step (a pool's switch not made yet) and again mid-bake change nothing
// of the outcome: the rollout goes on where it was, each step after its
// bake, and no pool moves twice.
func TestStagedRolloutSurvivesRestarts(t *testing.T) {
	p := producttest.Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	names := rolloutFleet(t, p, ns, 6, 0)

	// The canary's workers are not ready: step 1 waits on it.
	producttest.SetAvailable(t, kube, ns, "p00", false)
	const bake = 3 * time.Second
	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, nil, producttest.Step(1, false, bake), producttest.Step(100, true, 0)))
	p.WaitForConfig(t, ns, "p00", "new", metav1.ConditionTrue)
	p.WaitForRollout(t, "new", "step 1 waiting for the canary", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 1 && s.Phase == v1alpha1.RolloutProgressing && s.MovedPools == 1
	})

	// Killed mid-step; the canary becomes ready while nothing runs.
	p.Stop(t)
	producttest.SetAvailable(t, kube, ns, "p00", true)
	p.Start(t)
	p.WaitForRollout(t, "new", "baking step 1", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking
	})
	bakeSeen := time.Now()

	// Killed mid-bake: the bake is a workflow timer, and step 2 waits for it.
	p.Stop(t)
	require.Equal(t, keys(ns, "p00"), producttest.OnConfig(t, kube, ns, "new"))
	p.Start(t)
	p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.GreaterOrEqual(t, time.Since(bakeSeen), bake-500*time.Millisecond, "step 2 only after step 1's bake")
	for _, name := range names {
		p.WaitForConfig(t, ns, name, "new", metav1.ConditionTrue)
		p.WaitForEvents(t, ns, name, []string{
			`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "old"`,
			`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "old" to "new"`,
		})
	}
	plan := p.RolloutPlan(t, "new")
	require.Len(t, plan.Done, 2)
}

// TestStagedRolloutHaltsOnAFailingSwitch: an admission policy refuses the
// protection finalizer on the rolling-out config, so the canary's switch
// keeps failing: the rollout halts with a Warning naming the pool, and
// nothing else moves; with the policy lifted and paused toggled (the
// deprecated resume, which works when the rollout sees the pause), it ends.
func TestStagedRolloutHaltsOnAFailingSwitch(t *testing.T) {
	p := producttest.Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 4, 2)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", true, nil, producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	producttest.RefuseProtection(t, kube, "new")
	producttest.SetPaused(t, kube, "new", false)
	st := p.WaitForRollout(t, "new", "halted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	require.Contains(t, st.Message, fmt.Sprintf("the switch of WorkerPool %s/p02 to SandboxConfig \"new\" failed: Protect", ns))
	producttest.Eventually(t, "a Warning on the config", func() (bool, string) {
		evs := warnings(p.ConfigEvents(t, "new"))
		return len(evs) == 1 && strings.Contains(evs[0], "Warning RolloutHalted") && strings.Contains(evs[0], ns+"/p02"), fmt.Sprint(evs)
	})
	producttest.RequireStays(t, 2*time.Second, "nothing moves while halted", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 0, fmt.Sprint(on)
	})

	producttest.LiftRefusal(t, kube)
	producttest.SetPaused(t, kube, "new", true)
	p.WaitForRollout(t, "new", "the pause taken in", func(s *v1alpha1.RolloutStatus) bool { return s.ObservedGeneration >= 3 })
	producttest.SetPaused(t, kube, "new", false)
	p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	producttest.Eventually(t, "every pool on new", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 4, fmt.Sprint(on)
	})
}

// TestStagedRolloutEnds: removing the annotation mid-bake stops the
// rollout at once (Stopped, its admission dropped) and moves its pools
// back, as without a rollout; annotated again, it starts over; deleting the
// config stops it too, and the config goes once its pools moved off it.
func TestStagedRolloutEnds(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 4, 1)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, nil, producttest.Step(1, false, time.Hour), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "new", "baking step 1", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutBaking })
	require.Equal(t, keys(ns, "p01"), producttest.OnConfig(t, kube, ns, "new"))

	producttest.SetDefault(t, kube, "new", false)
	st := p.WaitForRollout(t, "new", "stopped", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutStopped })
	require.Nil(t, st.AdmittedThrough, "the admission dropped")
	require.Zero(t, st.Step)
	p.WaitForConfig(t, ns, "p01", "old", metav1.ConditionTrue)

	producttest.SetDefault(t, kube, "new", true)
	p.WaitForRollout(t, "new", "baking step 1 again", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutBaking && s.Step == 1
	})
	require.Equal(t, keys(ns, "p01"), producttest.OnConfig(t, kube, ns, "new"), "started over with the same pool")

	require.NoError(t, kube.Delete(ctx, producttest.GVisorConfig("new", true)))
	producttest.Eventually(t, "the rollout workflow to end Stopped", func() (bool, string) {
		// Get waits for the end: bounded, so the poll goes on.
		wait, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		run := p.TemporalClient().GetWorkflow(wait, p.Cluster().RolloutWorkflowID("new"), "")
		var res wfapi.RolloutResult
		if err := run.Get(wait, &res); err != nil {
			return false, err.Error()
		}
		return res.Phase == string(v1alpha1.RolloutStopped), fmt.Sprintf("%+v", res)
	})
	p.WaitForConfig(t, ns, "p01", "old", metav1.ConditionTrue)
	p.WaitGone(t, producttest.GVisorConfig("new", true))
}
