package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// getPool reads a pool live.
func getPool(t testing.TB, ns, name string) *v1alpha1.WorkerPool {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, testenv.Current().Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp))
	return &wp
}

// kubectlWaitMet is `kubectl wait --for=condition=SandboxConfigResolved`'s
// test of a pool: the condition is True and its observedGeneration is not
// below the pool's generation.
func kubectlWaitMet(wp *v1alpha1.WorkerPool) bool {
	c := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
	return c != nil && c.Status == metav1.ConditionTrue && (c.ObservedGeneration == 0 || c.ObservedGeneration >= wp.Generation)
}

// TestRepinDuringTemporalOutage: a pool re-pinned while the Temporal server
// is down does not say it has moved. The pool keeper looks at the new
// generation (it writes the summary for it) but the top-level
// SandboxConfigResolved is Unknown/Switching, naming the move, and
// status.observedGeneration stays at the generation acted on; a `kubectl
// wait --for=condition=SandboxConfigResolved` started at the re-pin returns
// only once Temporal is back and the pool's configRef names the new config.
func TestRepinDuringTemporalOutage(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "ro" + shortID()
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}
	t.Cleanup(func() { require.NoError(t, env.StartTemporal(context.Background())) }) // a no-op once it runs
	a, b := prefix+"-a", prefix+"-b"
	require.NoError(t, kube.Create(ctx, gvisorConfig(a, false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(b, false)))
	require.NoError(t, kube.Create(ctx, newPool(ns, "p", v1alpha1.SandboxClassGVisor, a)))
	require.Equal(t, int64(1), waitPool(t, ns, "p", a, metav1.ConditionTrue).Generation)

	require.NoError(t, env.StopTemporal())
	require.NoError(t, patchPool(ctx, kube, ns, "p", pin(b)))
	require.Equal(t, int64(2), getPool(t, ns, "p").Generation)

	// `kubectl wait --for=condition=SandboxConfigResolved`, from the re-pin
	// on: the condition True, and (as kubectl checks) not observed for an
	// earlier generation than the object's.
	waited := make(chan *v1alpha1.WorkerPool, 1)
	waitCtx, stopWait := context.WithCancel(ctx)
	t.Cleanup(stopWait)
	go func() {
		for waitCtx.Err() == nil {
			var wp v1alpha1.WorkerPool
			if err := kube.Get(waitCtx, client.ObjectKey{Namespace: ns, Name: "p"}, &wp); err == nil && kubectlWaitMet(&wp) {
				waited <- &wp
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// The keeper has looked at generation 2 once the summary is written for it.
	var summary *metav1.Condition
	eventually(t, 30*time.Second, "the pool keeper's look at generation 2", func() (bool, string) {
		wp := getPool(t, ns, "p")
		summary = meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
		return summary != nil && summary.ObservedGeneration == 2, fmt.Sprintf("summary %+v", summary)
	})
	wp := getPool(t, ns, "p")
	require.Equal(t, metav1.ConditionUnknown, summary.Status, "the summary of a move not made: %+v", summary)
	require.Equal(t, v1alpha1.ReasonSwitching, summary.Reason)
	require.Equal(t, fmt.Sprintf(`sandbox class "gvisor" is switching from %q to %q`, a, b), summary.Message)
	require.Equal(t, int64(1), wp.Status.ObservedGeneration, "status.observedGeneration says generation 2 was acted on")
	require.Equal(t, a, wp.Status.SandboxClasses[0].ConfigRef.NameOf())
	select {
	case got := <-waited:
		t.Fatalf("kubectl wait returned while Temporal is down, with configRef %q", got.Status.SandboxClasses[0].ConfigRef.NameOf())
	default:
	}

	require.NoError(t, env.StartTemporal(ctx))
	select {
	case got := <-waited:
		st := got.Status.SandboxClasses[0]
		require.Equal(t, b, st.ConfigRef.NameOf(), "kubectl wait returned before the move")
		require.Nil(t, st.PendingConfigRef)
	case <-time.After(stepBound):
		t.Fatalf("kubectl wait did not return within %s of Temporal's return", stepBound)
	}
	require.Equal(t, int64(2), waitPool(t, ns, "p", b, metav1.ConditionTrue).Status.ObservedGeneration)
	settle(t, chk, scope)
	requireSound(t, chk, scope)
}
