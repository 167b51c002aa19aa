package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
	"ate.dev/orchestrator/test/producttest"
	"ate.dev/orchestrator/workflows"
)

// TestCompetingSwitchCannotConfirmAReleasedConfig: anyone who can start
// workflows can start a switch beside the real one (docs/security.md). One
// is started by hand for the pool, under another workflow ID of the pool's,
// to a config "rival"; it claims rival and is held just before its confirm.
// Meanwhile the real switches take the claim over (the starter clears it as
// stale, or the switch to a new default displaces it), the pool moves to
// the new default, and rival is deleted and released. Let go, the hand-started
// switch finds its claim taken: it ends superseded, writes nothing and
// records no event, so no pool ever names the released config, and the
// invariant checker reports nothing.
func TestCompetingSwitchCannotConfirmAReleasedConfig(t *testing.T) {
	gate := producttest.NewGateContaining("Confirm", "rival")
	p := producttest.Run(t, gate)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	chk, err := crashtest.NewChecker(ctx, p.Env.RestConfig, p.Env.Scheme, p.TemporalClient())
	require.NoError(t, err)
	t.Cleanup(chk.Stop)
	t.Cleanup(gate.Release)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("first", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	wp := p.WaitForConfig(t, ns, "pool", "first", metav1.ConditionTrue)
	rival := producttest.GVisorConfig("rival", false)
	require.NoError(t, kube.Create(ctx, rival))
	p.CreateAfterOthers(t, producttest.GVisorConfig("second", false))

	// The hand-started switch: a pool workflow's child's ID, not the one
	// the starter uses, so the server does not keep it apart from the real
	// switches.
	run, err := p.TemporalClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: wfapi.SwitchWorkflowID(ns, "pool", 99), TaskQueue: p.TaskQueue,
	}, wfapi.SwitchWorkflow, wfapi.SwitchInput{
		Pool:  wfapi.PoolRef{Namespace: ns, Name: "pool", UID: string(wp.UID)},
		Class: v1alpha1.SandboxClassGVisor, From: "first", To: "rival", Generation: wp.Generation,
	})
	require.NoError(t, err)
	// Held at its confirm, it has claimed rival and read it live. (The
	// starter, which started no switch for that claim, may clear it as
	// stale already.)
	gate.WaitReached(t)

	// The real switch, to the new default, displaces the claim; rival,
	// deleted, is released, as no pool names it any more.
	producttest.SetDefault(t, kube, "second", true)
	p.WaitForConfig(t, ns, "pool", "second", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, rival))
	p.WaitGone(t, rival)

	gate.Release()
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var res wfapi.SwitchResult
	require.NoError(t, run.Get(runCtx, &res))
	// The checker first: it judges every state the pool went through.
	rep := chk.Check(ctx, crashtest.Scope{
		Namespaces: []string{ns},
		Configs:    func(name string) bool { return slices.Contains([]string{"first", "second", "rival"}, name) },
		TaskQueues: []string{p.TaskQueue},
	}, time.Minute)
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	require.True(t, rep.Converged)
	require.NoError(t, chk.Err())

	require.Equal(t, wfapi.OutcomeSuperseded, res.Outcome, "the hand-started switch found its claim taken")

	got := p.Get(t, ns, "pool").Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	require.Equal(t, "second", got.ConfigRef.NameOf())
	require.Nil(t, got.PendingConfigRef)
	for _, ev := range p.Events(t, ns, "pool") {
		require.NotContains(t, ev, `"rival"`, "no event about the superseded switch")
	}
	var gone v1alpha1.SandboxConfig
	require.Error(t, kube.Get(ctx, ctrlclient.ObjectKey{Name: "rival"}, &gone), "rival stays released")
}
