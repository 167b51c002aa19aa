package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestARollBackOffThePlanWritesNothing: a switch planned from a state the
// pool is no longer in (a stale starter plan, or a switch started by hand)
// whose Protect is refused rolls back with no claim. The pool is on B, in
// deletion (the pool holds it); the switch plans A to B. Its roll back must
// see that the class is not on A and write nothing: no stamp, no "keeping
// A" on a class on B. Its first attempt's completion is lost, so its retry
// reads the class again: a stamp left by the first would read as this run's
// confirm, and a SandboxConfigSwitched for a move that never happened would
// be recorded (P4).
func TestARollBackOffThePlanWritesNothing(t *testing.T) {
	lost := producttest.NewGateLosingCompletion("RollBack", "rbplan-b")
	p := producttest.Run(t, lost)
	t.Cleanup(lost.Release)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("rbplan-a", false)))
	b := producttest.GVisorConfig("rbplan-b", false)
	require.NoError(t, kube.Create(ctx, b))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "rbplan-b")))
	p.WaitForConfig(t, ns, "pool", "rbplan-b", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, b))
	wp := p.WaitForConfig(t, ns, "pool", "rbplan-b", metav1.ConditionFalse)
	before := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor).DeepCopy()
	eventsBefore := p.Events(t, ns, "pool")

	id := testenv.Current().ClusterName.SwitchWorkflowID(ns, "pool")
	stale := wfapi.SwitchInput{
		Pool:  wfapi.PoolRef{Namespace: ns, Name: "pool", UID: string(wp.UID)},
		Class: v1alpha1.SandboxClassGVisor, From: "rbplan-a", To: "rbplan-b", Generation: wp.Generation,
		PoolResourceVersion: wp.ResourceVersion,
	}
	run, err := p.TemporalClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: p.TaskQueue}, wfapi.SwitchWorkflow, stale)
	require.NoError(t, err)
	lost.WaitReached(t)
	lost.Release()
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var res wfapi.SwitchResult
	require.NoError(t, run.Get(runCtx, &res))

	after := p.Get(t, ns, "pool").Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	require.Equal(t, wfapi.OutcomeSuperseded, res.Outcome, "the class is not where the plan says: nothing of the plan applies (result %+v, class %+v)", res, after)
	require.Equal(t, before.LastSwitch, after.LastSwitch, "no stamp")
	require.Equal(t, "rbplan-b", after.ConfigRef.NameOf())
	c := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionResolved)
	require.NotContains(t, c.Message, `keeping "rbplan-a"`)
	for _, ev := range p.Events(t, ns, "pool") {
		require.False(t, strings.Contains(ev, "rbplan-a"), "no event of the stale plan: %q (before: %q)", ev, eventsBefore)
	}
}
