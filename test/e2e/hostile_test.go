package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// attackInput is what the attacker's workflow schedules, in order, on the
// product's task queue.
type attackInput struct {
	TaskQueue string
	Claim     activities.ClaimInput
	Confirm   activities.SettleInput
	Event     events.PoolEvent
}

// attack is a workflow of another type than the product's, run by a worker
// of the test's on a task queue of its own: anyone who can run a worker in
// the Temporal namespace can write one. It schedules the product's
// activities directly, each once, and reports what each returned.
func attack(ctx workflow.Context, in attackInput) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: in.TaskQueue, StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var out []string
	step := func(name string, arg any) {
		var res map[string]any
		if err := workflow.ExecuteActivity(ctx, name, arg).Get(ctx, &res); err != nil {
			out = append(out, name+": error: "+err.Error())
			return
		}
		b, _ := json.Marshal(res)
		out = append(out, name+": "+string(b))
	}
	step("Claim", in.Claim)
	step("Confirm", in.Confirm)
	step("RecordEvent", in.Event)
	return out, nil
}

// TestActivitiesHoldTheirOwnInvariants: a workflow of another type, on
// another task queue, under an ID that names the pool (the caller picks
// its ID), schedules Claim then Confirm of a config that is not protected,
// and a RecordEvent for a pool its ID does not name. The activities check
// for themselves: nothing is claimed or confirmed, no event is recorded,
// and the invariant checker reports nothing.
func TestActivitiesHoldTheirOwnInvariants(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	chk, err := crashtest.NewChecker(ctx, p.Env.RestConfig, p.Env.Scheme, p.TemporalClient())
	require.NoError(t, err)
	t.Cleanup(chk.Stop)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("first", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "other", "")))
	wp := p.WaitForConfig(t, ns, "pool", "first", metav1.ConditionTrue)
	other := p.WaitForConfig(t, ns, "other", "first", metav1.ConditionTrue)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("bare", false)))
	eventsBefore := p.Events(t, ns, "other")

	queue := testenv.TaskQueue(t) + "-attacker"
	w := worker.New(p.TemporalClient(), queue, worker.Options{})
	w.RegisterWorkflowWithOptions(attack, workflow.RegisterOptions{Name: "Attacker"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	ref := wfapi.PoolRef{Namespace: ns, Name: "pool", UID: string(wp.UID)}
	run, err := p.TemporalClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: testenv.Current().ClusterName.SwitchWorkflowID(ns, "pool"), TaskQueue: queue,
	}, "Attacker", attackInput{
		TaskQueue: p.TaskQueue,
		Claim:     activities.ClaimInput{Pool: ref, Class: v1alpha1.SandboxClassGVisor, Config: "bare"},
		Confirm:   activities.SettleInput{Pool: ref, Class: v1alpha1.SandboxClassGVisor, Config: "bare", Generation: wp.Generation},
		Event: events.PoolEvent{Pool: wfapi.PoolRef{Namespace: ns, Name: "other", UID: string(other.UID)},
			Type: "Normal", Reason: v1alpha1.EventReasonSandboxConfigSwitched, Action: "Switch",
			Note: `sandbox class "gvisor" switched from SandboxConfig "first" to "bare"`, Key: "attack"},
	})
	require.NoError(t, err)
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var steps []string
	require.NoError(t, run.Get(runCtx, &steps))
	t.Logf("the attacker's steps: %q", steps)

	rep := chk.Check(ctx, crashtest.Scope{
		Namespaces: []string{ns},
		Configs:    func(name string) bool { return slices.Contains([]string{"first", "bare"}, name) },
		TaskQueues: []string{p.TaskQueue},
	}, time.Minute)
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	require.True(t, rep.Converged)
	require.NoError(t, chk.Err())

	require.Len(t, steps, 3)
	require.Contains(t, steps[0], v1alpha1.ReasonSandboxConfigNotProtected, "the claim is refused")
	require.NotContains(t, steps[1], `"wrote":true`, "the confirm writes nothing")
	require.Contains(t, steps[2], "may not write WorkerPool "+ns+"/other", "the event is refused")
	got := p.Get(t, ns, "pool").Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	require.Equal(t, "first", got.ConfigRef.NameOf())
	require.Nil(t, got.PendingConfigRef)
	require.Equal(t, eventsBefore, p.Events(t, ns, "other"), "no event recorded for the other pool")
}

// TestHandStartedHostileSwitchesFailAtOnce: a switch started by hand under
// the pool's switch ID with an input no step can carry out fails at once,
// not retried, saying why; the pool's status is unchanged, and the pool's
// next real switch is not held up.
func TestHandStartedHostileSwitchesFailAtOnce(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("first", true)))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("second", false)))
	require.NoError(t, kube.Create(ctx, producttest.MicroVMConfig("vm")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	wp := p.WaitForConfig(t, ns, "pool", "first", metav1.ConditionTrue)
	ref := wfapi.PoolRef{Namespace: ns, Name: "pool", UID: string(wp.UID)}
	move := wfapi.SwitchInput{Pool: ref, Class: v1alpha1.SandboxClassGVisor, From: "first", To: "second", Generation: wp.Generation}

	tests := []struct {
		name   string
		id     string
		change func(in *wfapi.SwitchInput)
		want   string
	}{
		{name: "a class the pool's spec does not have", change: func(in *wfapi.SwitchInput) { in.Class, in.From, in.To = v1alpha1.SandboxClassMicroVM, "", "vm" },
			want: `has no sandbox class "microvm" in its spec`},
		{name: "a move without the pool's UID", change: func(in *wfapi.SwitchInput) { in.Pool.UID = "" },
			want: "a move names the pool's UID"},
		{name: "a config name with a slash", change: func(in *wfapi.SwitchInput) { in.To = "second/x" },
			want: `SandboxConfig name "second/x" is not a DNS subdomain`},
		{name: "an unknown class", change: func(in *wfapi.SwitchInput) { in.Class = "nope" },
			want: `unknown sandbox class "nope"`},
		{name: "a namespace that is no namespace name", id: testenv.Current().ClusterName.SwitchWorkflowID("Bad.NS", "pool"),
			change: func(in *wfapi.SwitchInput) { in.Pool.Namespace = "" },
			want:   `namespace "Bad.NS" is not a DNS label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Get(t, ns, "pool").Status.SandboxClasses
			in := move
			tt.change(&in)
			id := tt.id
			if id == "" {
				id = testenv.Current().ClusterName.SwitchWorkflowID(ns, "pool")
			}
			// The pool's own switch (its first resolution) may still be
			// completing: a start then would join it and read its result.
			producttest.Eventually(t, "no switch of the pool running", func() (bool, string) {
				d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, "")
				var notFound *serviceerror.NotFound
				if errors.As(err, &notFound) {
					return true, "none started under this ID"
				}
				if err != nil {
					return false, err.Error()
				}
				st := d.GetWorkflowExecutionInfo().GetStatus()
				return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
			})
			run, err := p.TemporalClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: p.TaskQueue,
				WorkflowExecutionErrorWhenAlreadyStarted: true}, wfapi.SwitchWorkflow, in)
			require.NoError(t, err)
			runCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			err = run.Get(runCtx, nil)
			require.Error(t, err, "the switch fails")
			require.NotErrorIs(t, err, context.DeadlineExceeded, "at once")
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, before, p.Get(t, ns, "pool").Status.SandboxClasses, "the pool's status is unchanged")
		})
	}

	// The pool's next real switch runs.
	producttest.SetDefault(t, kube, "second", true)
	producttest.SetDefault(t, kube, "first", false)
	p.WaitForConfig(t, ns, "pool", "second", metav1.ConditionTrue)
}

// TestAClaimForASpecThePoolNoLongerHas: a pool re-pinned to X and back
// before the switch to X claims never visits X: the claim, held until the
// pool is back, finds the spec no longer asking for X and ends superseded.
// A scale between a plan and its claim is no reason to drop the move.
func TestAClaimForASpecThePoolNoLongerHas(t *testing.T) {
	back := producttest.NewGateContaining("Claim", " pin-x9 ")
	scaled := producttest.NewGateContaining("Claim", " pin-y9 ")
	p := producttest.Run(t, back, scaled)
	t.Cleanup(back.Release)
	t.Cleanup(scaled.Release)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("pin-a9", true)))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("pin-x9", false)))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("pin-y9", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	p.WaitForConfig(t, ns, "pool", "pin-a9", metav1.ConditionTrue)

	// Pinned to X; its switch is held at its claim while the user pins it
	// back to A.
	producttest.Repin(t, kube, ns, "pool", "pin-x9")
	back.WaitReached(t)
	producttest.Repin(t, kube, ns, "pool", "pin-a9")
	back.Release()
	producttest.Eventually(t, "the pool back on A, at the generation of the pin back", func() (bool, string) {
		wp := p.Get(t, ns, "pool")
		st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		c := wp.Status.SandboxClasses[0].Conditions
		return st.ConfigRef.NameOf() == "pin-a9" && st.PendingConfigRef == nil && len(c) > 0 && c[0].ObservedGeneration == wp.Generation,
			fmt.Sprintf("configRef %q pending %q conditions %+v", st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), c)
	})
	for _, ev := range p.Events(t, ns, "pool") {
		require.NotContains(t, ev, `"pin-x9"`, "the pool never switched to X")
	}

	// Pinned to Y; the pool is scaled while the switch is held at its
	// claim: the move is still made.
	producttest.Repin(t, kube, ns, "pool", "pin-y9")
	scaled.WaitReached(t)
	producttest.Scale(t, kube, ns, "pool", 2)
	scaled.Release()
	p.WaitForConfig(t, ns, "pool", "pin-y9", metav1.ConditionTrue)
	var switched []string
	for _, ev := range p.Events(t, ns, "pool") {
		if strings.Contains(ev, v1alpha1.EventReasonSandboxConfigSwitched) {
			switched = append(switched, ev)
		}
	}
	require.Len(t, switched, 2, "to A, then to Y: %q", switched)
	require.Contains(t, switched[1], `to "pin-y9"`)
}
