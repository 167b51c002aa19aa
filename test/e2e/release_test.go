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

// TestUnusedConfigDeletesAtOnce: nothing protects a config no pool ever used.
func TestUnusedConfigDeletesAtOnce(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	c := producttest.GVisorConfig("never-used", true)
	require.NoError(t, p.Env.Kube.Create(ctx, c))
	require.Empty(t, c.Finalizers)
	require.NoError(t, p.Env.Kube.Delete(ctx, c))
	p.WaitGone(t, c)
}

// TestSharedConfigIsReleasedByItsLastUser: two pools on one config and a
// third on another; delete both configs, then the third pool and one of the
// two: the other config is gone, the shared one stays in deletion; delete
// the last pool: it is gone.
func TestSharedConfigIsReleasedByItsLastUser(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	shared, other := producttest.GVisorConfig("shared", false), producttest.GVisorConfig("other", false)
	require.NoError(t, kube.Create(ctx, shared))
	require.NoError(t, kube.Create(ctx, other))
	for _, wp := range []*v1alpha1.WorkerPool{producttest.Pool(ns, "a", "shared"), producttest.Pool(ns, "b", "shared"), producttest.Pool(ns, "c", "other")} {
		require.NoError(t, kube.Create(ctx, wp))
	}
	p.WaitForConfig(t, ns, "a", "shared", metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "b", "shared", metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "c", "other", metav1.ConditionTrue)

	require.NoError(t, kube.Delete(ctx, shared))
	require.NoError(t, kube.Delete(ctx, other))
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "c", "")))
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "a", "")))
	p.WaitGone(t, other)
	p.WaitForRelease(t, "shared", "waiting")
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(shared), shared))
	require.NotNil(t, shared.DeletionTimestamp)
	require.Equal(t, []string{v1alpha1.ProtectionFinalizer}, shared.Finalizers)

	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "b", "")))
	p.WaitGone(t, shared)
}

// TestRepinnedPoolReleasesItsOldConfig: a pinned pool changes its configRef;
// the old config, then deleted, is gone.
func TestRepinnedPoolReleasesItsOldConfig(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	old, next := producttest.GVisorConfig("old", false), producttest.GVisorConfig("next", false)
	require.NoError(t, kube.Create(ctx, old))
	require.NoError(t, kube.Create(ctx, next))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pinned", "old")))
	p.WaitForConfig(t, ns, "pinned", "old", metav1.ConditionTrue)
	producttest.Repin(t, kube, ns, "pinned", "next")
	p.WaitForConfig(t, ns, "pinned", "next", metav1.ConditionTrue)

	require.NoError(t, kube.Delete(ctx, old))
	p.WaitGone(t, old)
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(next), next))
	require.Contains(t, next.Finalizers, v1alpha1.ProtectionFinalizer)
}

// TestReleaseAfterRestart: with the worker and the starter stopped, delete a
// config's last user; start them; the config is released by the starter's
// start-up resync.
func TestReleaseAfterRestart(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	// "held" is deleted while the product runs: its release workflow waits.
	// "unseen" is deleted while the product is down: no workflow knows it.
	c, unseen := producttest.GVisorConfig("held", false), producttest.GVisorConfig("unseen", false)
	require.NoError(t, kube.Create(ctx, c))
	require.NoError(t, kube.Create(ctx, unseen))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "user", "held")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "user2", "unseen")))
	p.WaitForConfig(t, ns, "user", "held", metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "user2", "unseen", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, c))
	p.WaitForRelease(t, "held", "waiting")

	p.Stop(t)
	require.NoError(t, kube.Delete(ctx, unseen))
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "user", "")))
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "user2", "")))
	for _, cfg := range []*v1alpha1.SandboxConfig{c, unseen} {
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(cfg), cfg))
		require.Contains(t, cfg.Finalizers, v1alpha1.ProtectionFinalizer, "nothing releases it while the product is down")
	}

	p.Start(t)
	p.WaitGone(t, c)
	p.WaitGone(t, unseen)
}
