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

// TestPinnedPool walks a pinned pool through a missing target (kept on its
// config), the target created later (resolves), a target of the other class
// (mismatch) and a target in deletion.
func TestPinnedPool(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-release1", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pinned", "gvisor-release1")))
	p.WaitForConfig(t, ns, "pinned", "gvisor-release1", metav1.ConditionTrue)

	producttest.Repin(t, kube, ns, "pinned", "gvisor-release2")
	got := p.WaitForConfig(t, ns, "pinned", "gvisor-release1", metav1.ConditionFalse)
	c := producttest.ResolvedCondition(got)
	require.Equal(t, v1alpha1.ReasonSandboxConfigNotFound, c.Reason)
	require.Equal(t, `SandboxConfig "gvisor-release2" not found; keeping "gvisor-release1"`, c.Message)
	summary := got.Status.Conditions[0]
	require.Equal(t, v1alpha1.ConditionSandboxConfigResolved, summary.Type)
	require.Equal(t, metav1.ConditionFalse, summary.Status)
	require.Equal(t, v1alpha1.ReasonSandboxConfigNotFound, summary.Reason)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-release2", false)))
	got = p.WaitForConfig(t, ns, "pinned", "gvisor-release2", metav1.ConditionTrue)
	require.Equal(t, metav1.ConditionTrue, got.Status.Conditions[0].Status)

	require.NoError(t, kube.Create(ctx, producttest.MicroVMConfig("microvm-1")))
	producttest.Repin(t, kube, ns, "pinned", "microvm-1")
	got = p.WaitForConfig(t, ns, "pinned", "gvisor-release2", metav1.ConditionFalse)
	require.Equal(t, v1alpha1.ReasonSandboxClassMismatch, producttest.ResolvedCondition(got).Reason)
	require.Equal(t, `SandboxConfig "microvm-1" is of sandbox class "microvm", not "gvisor"; keeping "gvisor-release2"`,
		producttest.ResolvedCondition(got).Message)
	var vm v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "microvm-1"}, &vm))
	require.Empty(t, vm.Finalizers, "a config no pool may use is never protected")

	p.WaitForEvents(t, ns, "pinned", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-release1"`,
		`Warning SandboxConfigNotFound: SandboxConfig "gvisor-release2" not found; keeping "gvisor-release1"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-release1" to "gvisor-release2"`,
		`Warning SandboxClassMismatch: SandboxConfig "microvm-1" is of sandbox class "microvm", not "gvisor"; keeping "gvisor-release2"`,
	})
}

// TestConfigInDeletion: a pool on a config in deletion keeps it while pinned,
// with the problem shown; a new pool referring to it is refused; scaling the
// first pool still reaches its Deployment.
func TestConfigInDeletion(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	old := producttest.GVisorConfig("gvisor-old", false)
	require.NoError(t, kube.Create(ctx, old))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "first", "gvisor-old")))
	p.WaitForConfig(t, ns, "first", "gvisor-old", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "first", 0)

	require.NoError(t, kube.Delete(ctx, old))
	got := p.WaitForConfig(t, ns, "first", "gvisor-old", metav1.ConditionFalse)
	require.Equal(t, v1alpha1.ReasonSandboxConfigDeleting, producttest.ResolvedCondition(got).Reason)
	require.Equal(t, `SandboxConfig "gvisor-old" is being deleted; keeping "gvisor-old"`, producttest.ResolvedCondition(got).Message)

	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "second", "gvisor-old")))
	got = p.WaitForConfig(t, ns, "second", "", metav1.ConditionFalse)
	require.Equal(t, `SandboxConfig "gvisor-old" is being deleted`, producttest.ResolvedCondition(got).Message)
	p.RequireNoDeployment(t, ns, "second")

	producttest.Scale(t, kube, ns, "first", 3)
	p.WaitForDeployment(t, ns, "first", 3)

	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(old), old))
	require.NotNil(t, old.DeletionTimestamp)
	require.Contains(t, old.Finalizers, v1alpha1.ProtectionFinalizer, "held while a pool uses it")

	require.NoError(t, kube.Delete(ctx, got))
	require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "first", "")))
	p.WaitGone(t, old)
}
