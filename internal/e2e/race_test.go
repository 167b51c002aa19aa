package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestClaimRace is the race the claim exists for: a config deleted between a
// switch's claim and its live read. The release must not remove the finalizer
// while the claim stands, and the switch must roll back; no pool ever names a
// config that no longer exists.
func TestClaimRace(t *testing.T) {
	held := newGate("ReadConfig", "gvisor-next")
	p := startProduct(t, held)
	ctx := context.Background()
	kube := p.env.Kube
	ns := p.env.Namespace(t)

	require.NoError(t, kube.Create(ctx, gvisorConfig("gvisor-now", false)))
	require.NoError(t, kube.Create(ctx, pool(ns, "racer", "gvisor-now")))
	p.waitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionTrue)

	next := gvisorConfig("gvisor-next", false)
	require.NoError(t, kube.Create(ctx, next))
	repin(t, kube, ns, "racer", "gvisor-next")
	held.waitReached(t) // protected and claimed, not yet read

	var wp v1alpha1.WorkerPool
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "racer"}, &wp))
	require.Equal(t, "gvisor-next", refName(wp.Status.SandboxClasses[0].PendingConfigRef), "the claim is written")
	require.NoError(t, kube.Delete(ctx, next))

	// The release workflow runs now and must find the claim, in the cache or
	// the live list, and wait: the config stays, protected.
	p.waitForRelease(t, "gvisor-next", "waiting")
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(next), next))
	require.Contains(t, next.Finalizers, v1alpha1.ProtectionFinalizer)

	held.release()
	got := p.waitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	require.Equal(t, v1alpha1.ReasonSandboxConfigDeleting, resolvedCondition(got).Reason)
	require.Equal(t, `SandboxConfig "gvisor-next" is being deleted; keeping "gvisor-now"`, resolvedCondition(got).Message)
	p.waitGone(t, next)
	p.waitForEvents(t, ns, "racer", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`,
		`Warning SandboxConfigDeleting: SandboxConfig "gvisor-next" is being deleted; keeping "gvisor-now"`,
	})
}

// TestDeletedBeforeClaim: a config deleted between resolution and the claim
// is refused by the finalizer step and rolled back.
func TestDeletedBeforeClaim(t *testing.T) {
	held := newGate("Protect", "{gvisor-next gvisor}")
	p := startProduct(t, held)
	ctx := context.Background()
	kube := p.env.Kube
	ns := p.env.Namespace(t)

	require.NoError(t, kube.Create(ctx, gvisorConfig("gvisor-now", false)))
	require.NoError(t, kube.Create(ctx, pool(ns, "racer", "gvisor-now")))
	p.waitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionTrue)

	next := gvisorConfig("gvisor-next", false)
	require.NoError(t, kube.Create(ctx, next))
	repin(t, kube, ns, "racer", "gvisor-next")
	held.waitReached(t)
	require.NoError(t, kube.Delete(ctx, next))
	p.waitGone(t, next) // never protected, so it goes at once
	held.release()

	got := p.waitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	require.Equal(t, `SandboxConfig "gvisor-next" not found; keeping "gvisor-now"`, resolvedCondition(got).Message)
}
