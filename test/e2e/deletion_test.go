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

// TestAPoolInDeletionIsLeftAlone: a pool held in deletion by another
// finalizer is not switched, not protected anew, and its Deployment is not
// applied; once it is gone, the config it held is released as usual.
func TestAPoolInDeletionIsLeftAlone(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	wp := producttest.Pool(ns, "leaving", "")
	wp.Finalizers = []string{"example.com/hold"}
	require.NoError(t, kube.Create(ctx, wp))
	p.WaitForConfig(t, ns, "leaving", "gvisor-default", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "leaving", *wp.Spec.Replicas)
	require.NoError(t, kube.Delete(ctx, wp))

	// A change that would move it, and a scale, while it is in deletion.
	next := producttest.GVisorConfig("gvisor-next", true)
	p.CreateAfterOthers(t, next)
	producttest.Scale(t, kube, ns, "leaving", 5)
	// A pool that is not in deletion moves meanwhile: the product is busy.
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "staying", "")))
	p.WaitForConfig(t, ns, "staying", "gvisor-next", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "staying", 0)

	got := p.Get(t, ns, "leaving")
	require.Equal(t, "gvisor-default", producttest.RefName(got.Status.SandboxClasses[0].ConfigRef))
	require.Nil(t, got.Status.SandboxClasses[0].PendingConfigRef)
	p.WaitForDeployment(t, ns, "leaving", *wp.Spec.Replicas) // not scaled
	require.Equal(t, []string{`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`},
		p.Events(t, ns, "leaving"))

	// Gone: the config it held goes once deleted.
	got.Finalizers = nil
	require.NoError(t, kube.Update(ctx, got))
	p.WaitGone(t, got)
	var def v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "gvisor-default"}, &def))
	require.NoError(t, kube.Delete(ctx, &def))
	p.WaitGone(t, &def)
}
