package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// runRecreatedCase: the worker is killed right after the release's
// Unprotect landed (the config is gone), before its completion reaches
// Temporal. While the release's worker is down, the config is created again
// under the same name, a pool moves onto it (its switch runs on a second
// worker, on another task queue, so the release's Unprotect cannot be
// retried meanwhile) and it is deleted, which signals the release still open
// for the old incarnation. The retried Unprotect must not strip the new
// incarnation, which a pool uses (P2, P3), and the release must not swallow
// its deletion: the new incarnation is released once the pool moves off it,
// and not before.
func runRecreatedCase(t *testing.T, chk *Checker) {
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	ns := env.Namespace(t)
	tq, tq2 := testenv.TaskQueue(t), testenv.TaskQueue(t)+"-other"
	starter, starter2 := starterStandIn{taskQueue: tq}, starterStandIn{taskQueue: tq2}
	prefix := fmt.Sprintf("k%s-recreated", shortID())
	old, target := prefix+"-old", prefix+"-new"
	cleanScope(t, prefix, ns)
	began := time.Now()
	since := func() time.Duration { return time.Since(began).Round(100 * time.Millisecond) }

	w := newProcess(t, "worker", tq, "")
	w.StartCrashing("Unprotect", old)
	require.NoError(t, kube.Create(ctx, gvisorConfig(old, false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(target, false)))
	require.NoError(t, kube.Create(ctx, newPool(ns, "pool", v1alpha1.SandboxClassGVisor, old)))
	starter.pool(t, ns, "pool")
	waitPool(t, ns, "pool", old, metav1.ConditionTrue)
	require.NoError(t, patchPool(ctx, kube, ns, "pool", pin(target)))
	starter.pool(t, ns, "pool")
	waitPool(t, ns, "pool", target, metav1.ConditionTrue)
	waitSwitchesDone(t, ns, "pool")

	// The first incarnation, unused, is deleted; its release removes the
	// finalizer and the worker dies before reporting it.
	require.NoError(t, kube.Delete(ctx, gvisorConfig(old, false)))
	starter.release(t, old)
	w.WaitCrash("Unprotect", stepBound)
	killed := w.Pid()
	waitGone(t, gvisorConfig(old, false))
	t.Logf("%s: the worker crashed after Unprotect; the first incarnation is gone", since())

	// In the gap: a second incarnation, used by a pool, deleted.
	// Both objects exist before the second worker starts, so its pool
	// keeper's caches hold both when it first looks (a pool seen before
	// its config, by independent informers, would first be reported
	// SandboxConfigNotFound).
	second := gvisorConfig(old, false)
	require.NoError(t, kube.Create(ctx, second))
	require.NoError(t, kube.Create(ctx, newPool(ns, "user", v1alpha1.SandboxClassGVisor, old)))
	w2 := newProcess(t, "worker", tq2, "")
	w2.Start()
	starter2.pool(t, ns, "user")
	waitPool(t, ns, "user", old, metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, gvisorConfig(old, false)))
	starter.release(t, old) // lands on the release still open for the first incarnation
	requireHeld := func(why string) {
		t.Helper()
		var c v1alpha1.SandboxConfig
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: old}, &c), "%s: the second incarnation exists", why)
		require.Equal(t, second.UID, c.UID, why)
		require.NotNil(t, c.DeletionTimestamp, why)
		require.Contains(t, c.Finalizers, v1alpha1.ProtectionFinalizer, "%s: the second incarnation keeps its finalizer", why)
	}
	requireHeld("before the retry")
	t.Logf("%s: the config was created again, used by WorkerPool %s/user and deleted; restarting the release's worker", since(), ns)

	// The retried Unprotect sees another incarnation; the release looks at
	// the new one, finds the pool and waits (or, wrongly, strips it).
	w.Start()
	eventually(t, stepBound, "the release to wait for the second incarnation, or the config to go", func() (bool, string) {
		var c v1alpha1.SandboxConfig
		if err := kube.Get(ctx, client.ObjectKey{Name: old}, &c); apierrors.IsNotFound(err) {
			return true, "gone"
		}
		resp, err := env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf(
			"WorkflowId = %q AND Outcome = %q AND ExecutionStatus = 'Running'", testenv.Current().ClusterName.ReleaseWorkflowID(old), wfapi.OutcomeWaiting)})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) > 0, fmt.Sprintf("%d waiting release runs; finalizers %v", len(resp.Executions), c.Finalizers)
	})
	requireHeld("after the retry, the release waiting")

	// The pool moves off: the second incarnation is released.
	require.NoError(t, patchPool(ctx, kube, ns, "user", pin(target)))
	starter2.pool(t, ns, "user")
	waitPool(t, ns, "user", target, metav1.ConditionTrue)
	waitReleased(t, old)
	waitGone(t, second)
	t.Logf("%s: the second incarnation was released once unused", since())

	waitEvents(t, ns, "user", []string{
		fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, old),
		// Pinned to the config when it was deleted, the pool said so.
		fmt.Sprintf(`Warning SandboxConfigDeleting: SandboxConfig %q is being deleted; keeping %q`, old, old),
		fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, old, target),
	})
	waitSwitchesDone(t, ns, "pool")
	waitSwitchesDone(t, ns, "user")
	// The retried Unprotect ran on the next incarnation and found another
	// UID under the name: gone, nothing touched.
	again := rerunsAfterKill(t, tq, "Unprotect", killed)
	t.Logf("Unprotect, killed in worker pid %d, ran again: %+v", killed, again)
	require.Len(t, again, 1, "the histories show the killed Unprotect retried once")
	var res activities.UnprotectResult
	require.NoError(t, json.Unmarshal([]byte(again[0].Result), &res), "the retried Unprotect's result %s", again[0].Result)
	require.Equal(t, activities.ReleaseGone, res.Result, "the retried Unprotect's result")
	requireSound(t, chk, Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{tq, tq2}})
}
