package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestWalk is spec 001's events example: an unpinned pool follows the class
// default through five moves, and its events list them, in order, once each.
func TestWalk(t *testing.T) {
	p := startProduct(t)
	ctx := context.Background()
	kube := p.env.Kube
	ns := p.env.Namespace(t)

	require.NoError(t, kube.Create(ctx, gvisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, pool(ns, "counter", "")))
	p.waitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	v2 := gvisorConfig("gvisor-default-v2", true)
	p.createAfterOthers(t, v2)
	got := p.waitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)
	require.Equal(t, `resolved to SandboxConfig "gvisor-default-v2"`,
		got.Status.SandboxClasses[0].Conditions[0].Message)

	setDefault(t, kube, "gvisor-default-v2", false)
	p.waitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	setDefault(t, kube, "gvisor-default-v2", true)
	p.waitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)

	require.NoError(t, kube.Delete(ctx, v2))
	p.waitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)
	p.waitGone(t, v2)

	p.waitForEvents(t, ns, "counter", []string{
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

func setDefault(t *testing.T, kube client.Client, name string, on bool) {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(context.Background(), client.ObjectKey{Name: name}, &c))
	base := c.DeepCopy()
	if on {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, v1alpha1.ClassDefaultAnnotation, "true")
	} else {
		delete(c.Annotations, v1alpha1.ClassDefaultAnnotation)
	}
	require.NoError(t, kube.Patch(context.Background(), &c, client.MergeFrom(base)))
}

// TestRecreatedPool: a pool deleted and created again under the same name is
// a new pool: it resolves again and gets its own first-resolution event.
func TestRecreatedPool(t *testing.T) {
	p := startProduct(t)
	ctx := context.Background()
	kube := p.env.Kube
	ns := p.env.Namespace(t)

	require.NoError(t, kube.Create(ctx, gvisorConfig("gvisor-default", true)))
	first := pool(ns, "phoenix", "")
	require.NoError(t, kube.Create(ctx, first))
	p.waitForConfig(t, ns, "phoenix", "gvisor-default", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, first))
	p.waitGone(t, first)

	second := pool(ns, "phoenix", "")
	require.NoError(t, kube.Create(ctx, second))
	got := p.waitForConfig(t, ns, "phoenix", "gvisor-default", metav1.ConditionTrue)
	require.NotEqual(t, first.UID, got.UID)
	p.waitForEvents(t, ns, "phoenix", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
	})
}
