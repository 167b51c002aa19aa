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

// TestWalk is spec 001's events example: an unpinned pool follows the class
// default through five moves, and its events list them, in order, once each.
func TestWalk(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	v2 := producttest.GVisorConfig("gvisor-default-v2", true)
	p.CreateAfterOthers(t, v2)
	got := p.WaitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)
	require.Equal(t, `resolved to SandboxConfig "gvisor-default-v2"`,
		got.Status.SandboxClasses[0].Conditions[0].Message)

	producttest.SetDefault(t, kube, "gvisor-default-v2", false)
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	producttest.SetDefault(t, kube, "gvisor-default-v2", true)
	p.WaitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)

	require.NoError(t, kube.Delete(ctx, v2))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)
	p.WaitGone(t, v2)

	p.WaitForEvents(t, ns, "counter", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default" to "gvisor-default-v2"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default-v2" to "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default" to "gvisor-default-v2"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default-v2" to "gvisor-default"`,
	})

	var def v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "gvisor-default"}, &def))
	require.Contains(t, def.Finalizers, v1alpha1.ProtectionFinalizer, "a config in use is protected")
}

// TestRecreatedPool: a pool deleted and created again under the same name is
// a new pool: it resolves again and gets its own first-resolution event.
func TestRecreatedPool(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	first := producttest.Pool(ns, "phoenix", "")
	require.NoError(t, kube.Create(ctx, first))
	p.WaitForConfig(t, ns, "phoenix", "gvisor-default", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, first))
	p.WaitGone(t, first)

	second := producttest.Pool(ns, "phoenix", "")
	require.NoError(t, kube.Create(ctx, second))
	got := p.WaitForConfig(t, ns, "phoenix", "gvisor-default", metav1.ConditionTrue)
	require.NotEqual(t, first.UID, got.UID)
	p.WaitForEvents(t, ns, "phoenix", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
	})
}
