package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// TestWorkerRestartedDuringTemporalOutage: a worker (re)started while the
// Temporal server is down runs the pool keeper all the same: a scale of a
// pool reaches its Deployment, and the pool's status mirrors it, while
// Temporal is still down; once it is back, everything settles.
func TestWorkerRestartedDuringTemporalOutage(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "wo" + shortID()
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}
	t.Cleanup(func() { require.NoError(t, env.StartTemporal(context.Background())) }) // a no-op once it runs
	require.NoError(t, kube.Create(ctx, gvisorConfig(prefix+"-d1", true)))
	require.NoError(t, kube.Create(ctx, newPool(ns, "p", v1alpha1.SandboxClassGVisor, "")))
	waitPool(t, ns, "p", prefix+"-d1", metav1.ConditionTrue)
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: ns, Name: "p"}
	eventually(t, stepBound, "the pool's Deployment", func() (bool, string) {
		err := kube.Get(ctx, key, &d)
		return err == nil, fmt.Sprint(err)
	})

	require.NoError(t, env.StopTemporal())
	p.worker.Kill()
	p.worker.Start()
	require.NoError(t, patchPool(ctx, kube, ns, "p", scale(3)))
	generation := getPool(t, ns, "p").Generation
	eventually(t, 30*time.Second, "the scale to reach the Deployment while Temporal is down", func() (bool, string) {
		require.NoError(t, kube.Get(ctx, key, &d))
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 3, fmt.Sprintf("Deployment replicas %v", deref(d.Spec.Replicas))
	})
	// The local cluster's controllers, scheduler and kwok bring the pods
	// up: their readiness reaches the pool with Temporal still down.
	eventually(t, 60*time.Second, "the pool's status to mirror its Deployment's three Ready pods while Temporal is down", func() (bool, string) {
		wp := getPool(t, ns, "p")
		return wp.Status.Replicas == 3 && wp.Status.ReadyReplicas == 3 && wp.Status.ObservedGeneration == generation,
			fmt.Sprintf("replicas %d ready %d observedGeneration %d (generation %d)", wp.Status.Replicas, wp.Status.ReadyReplicas, wp.Status.ObservedGeneration, generation)
	})
	require.True(t, p.worker.Running(), "the worker keeps running while Temporal is down")

	require.NoError(t, env.StartTemporal(ctx))
	settle(t, chk, scope)
	requireSound(t, chk, scope)
}
