package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// hostileUnprotect is a workflow of a type the product does not know, run
// by a worker of the test's own on another task queue, that schedules the
// product's Unprotect activity on the product's task queue, by name, with
// only the config's name: what anyone who can run a worker in the namespace
// can do (docs/security.md).
func hostileUnprotect(ctx workflow.Context, taskQueue, config string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           taskQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res json.RawMessage
	if err := workflow.ExecuteActivity(ctx, "Unprotect", activities.UnprotectInput{Config: config}).Get(ctx, &res); err != nil {
		return "", err
	}
	return string(res), nil
}

// TestUnprotectChecksTheUsersItself: Unprotect scheduled directly, by a
// workflow of another type on another task queue, for a config in deletion
// that a pool uses, refuses: the finalizer stays while the pool names the
// config (P2), the release goes on waiting, and the config is released once
// the pool is gone; the invariant checker reports nothing.
func TestUnprotectChecksTheUsersItself(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	chk, err := crashtest.NewChecker(ctx, p.Env.RestConfig, p.Env.Scheme, p.TemporalClient())
	require.NoError(t, err)
	t.Cleanup(chk.Stop)

	held := producttest.GVisorConfig("held", false)
	require.NoError(t, kube.Create(ctx, held))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "holder", "held")))
	p.WaitForConfig(t, ns, "holder", "held", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, held))
	p.WaitForRelease(t, "held", wfapi.OutcomeWaiting)

	hostileTQ := p.TaskQueue + "-hostile"
	w := worker.New(p.TemporalClient(), hostileTQ, worker.Options{})
	w.RegisterWorkflowWithOptions(hostileUnprotect, workflow.RegisterOptions{Name: "NotTheProduct"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	run, err := p.TemporalClient().ExecuteWorkflow(runCtx, client.StartWorkflowOptions{
		// An ID of this cluster, so that the worker's cluster guard lets the
		// step through to Unprotect's own check.
		ID: p.Cluster().ReleaseWorkflowID("not-held"), TaskQueue: hostileTQ,
	}, "NotTheProduct", p.TaskQueue, "held")
	require.NoError(t, err)
	var res string
	err = run.Get(runCtx, &res)
	t.Logf("the hostile Unprotect returned %s (error %v)", res, err)

	var c v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(ctx, ctrlclient.ObjectKey{Name: "held"}, &c), "the config a pool uses is still there")
	require.NotNil(t, c.DeletionTimestamp)
	require.Contains(t, c.Finalizers, v1alpha1.ProtectionFinalizer, "Unprotect refused: the pool still names the config")
	require.NoError(t, err, "the step ran: only Unprotect's own check refused it")
	require.Contains(t, res, `"in use"`, "Unprotect says why it refused")

	// The release still holds it; the pool's deletion lets it go.
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "holder", "")))
	p.WaitGone(t, held)
	rep := chk.Check(ctx, crashtest.Scope{
		Namespaces: []string{ns},
		Configs:    func(name string) bool { return slices.Contains([]string{"held"}, name) },
		TaskQueues: []string{p.TaskQueue},
	}, time.Minute)
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	require.True(t, rep.Converged)
	require.NoError(t, chk.Err())
}
