package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestClaimRace is the race the claim exists for: a config deleted between a
// switch's claim and its confirm's live read. The release must not remove
// the finalizer while the claim stands, and the switch must roll back; no
// pool ever names a config that no longer exists.
func TestClaimRace(t *testing.T) {
	held := producttest.NewGateContaining("Confirm", "gvisor-next")
	p, ns, next := raceToNext(t, held) // protected and claimed, not yet confirmed
	ctx := context.Background()
	kube := p.Env.Kube

	var wp v1alpha1.WorkerPool
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "racer"}, &wp))
	require.Equal(t, "gvisor-next", producttest.RefName(wp.Status.SandboxClasses[0].PendingConfigRef), "the claim is written")
	require.NoError(t, kube.Delete(ctx, next))

	// The release workflow runs now and must find the claim, in the cache or
	// the live list, and wait: the config stays, protected.
	p.WaitForRelease(t, "gvisor-next", "waiting")
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(next), next))
	require.Contains(t, next.Finalizers, v1alpha1.ProtectionFinalizer)

	held.Release()
	got := p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	// The roll-back says Deleting; the switch's end wakes the release at
	// once, so by the time this reads the pool the config may be gone and
	// the condition NotFound already. The events below show both, in order.
	require.Contains(t, []string{v1alpha1.ReasonSandboxConfigDeleting, v1alpha1.ReasonSandboxConfigNotFound},
		producttest.ResolvedCondition(got).Reason)
	p.WaitGone(t, next)
	// The failure changed once the config was gone, and is reported again.
	p.WaitForEvents(t, ns, "racer", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`,
		`Warning SandboxConfigDeleting: SandboxConfig "gvisor-next" is being deleted; keeping "gvisor-now"`,
		`Warning SandboxConfigNotFound: SandboxConfig "gvisor-next" not found; keeping "gvisor-now"`,
	})
}

// TestDeletedBeforeClaim: a config deleted between resolution and the claim
// is refused by the finalizer step and rolled back.
func TestDeletedBeforeClaim(t *testing.T) {
	held := producttest.NewGateContaining("Protect", "{gvisor-next gvisor true ")
	p, ns, next := raceToNext(t, held)
	ctx := context.Background()
	kube := p.Env.Kube
	require.NoError(t, kube.Delete(ctx, next))
	p.WaitGone(t, next) // never protected, so it goes at once
	held.Release()

	got := p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	require.Equal(t, `SandboxConfig "gvisor-next" not found; keeping "gvisor-now"`, producttest.ResolvedCondition(got).Message)
}

// TestRecreatedBeforeClaim: a config deleted after a switch protected it and
// before its claim is released (nothing names it yet), then created again
// under the same name, without the finalizer. The switch's claim (when its
// cache shows the new config) or its confirm's live read sees a config that
// exists and is not in deletion, but is not the one it protected: the pool
// must not name it before it is protected again, or it would name a config
// whose deletion nothing holds back (P1).
func TestRecreatedBeforeClaim(t *testing.T) {
	held := producttest.NewGateContaining("Claim", "gvisor-next")
	p, ns, next := raceToNext(t, held) // protected, not yet claimed
	ctx := context.Background()
	kube := p.Env.Kube
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(next), next))
	require.Contains(t, next.Finalizers, v1alpha1.ProtectionFinalizer, "the switch protected it")
	require.NoError(t, kube.Delete(ctx, next))
	p.WaitGone(t, next) // no claim yet: its release lets it go

	again := producttest.GVisorConfig("gvisor-next", false)
	require.NoError(t, kube.Create(ctx, again))
	held.Release()

	p.WaitForConfig(t, ns, "racer", "gvisor-next", metav1.ConditionTrue)
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(again), again))
	require.Contains(t, again.Finalizers, v1alpha1.ProtectionFinalizer, "the config the pool names is protected")

	// And it is held back like any config in use.
	require.NoError(t, kube.Delete(ctx, again))
	p.WaitForRelease(t, "gvisor-next", "waiting")
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(again), again))
	require.NotNil(t, again.DeletionTimestamp)
}

// TestConfirmLostWithThePool: a confirm's write lands, but neither its
// completion nor the heartbeat that says it landed reaches the server (the
// worker died between the write and the heartbeat, or the write's response
// never came back), and the pool is deleted before the retry. The retry
// finds no pool to read the write back from; the pool's last states,
// replayed by the API server from the claim on, show the move, so its event
// is still recorded (P4: every configRef value written has its event).
func TestConfirmLostWithThePool(t *testing.T) {
	lost := producttest.NewGateLosingCompletion("Confirm", "gvisor-next")
	p, ns, _ := raceToNext(t, lost) // the confirm has written; nobody knows
	ctx := context.Background()
	kube := p.Env.Kube

	var wp v1alpha1.WorkerPool
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "racer"}, &wp))
	require.Equal(t, "gvisor-next", producttest.RefName(wp.Status.SandboxClasses[0].ConfigRef), "the confirm's write landed")
	require.NoError(t, kube.Delete(ctx, &wp))
	p.WaitGone(t, &wp)
	lost.Release()

	p.WaitForEvents(t, ns, "racer", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-now" to "gvisor-next"`,
	})
}

// raceToNext runs the product with gate, settles the pool "racer" on
// "gvisor-now", re-pins it to a new "gvisor-next" and returns once the
// switch is held at the gate.
func raceToNext(t *testing.T, gate *producttest.Gate) (*producttest.Product, string, *v1alpha1.SandboxConfig) {
	t.Helper()
	p := producttest.Run(t, gate)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-now", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "racer", "gvisor-now")))
	p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionTrue)

	next := producttest.GVisorConfig("gvisor-next", false)
	require.NoError(t, kube.Create(ctx, next))
	producttest.Repin(t, kube, ns, "racer", "gvisor-next")
	gate.WaitReached(t)
	return p, ns, next
}
