package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestNoDefaultThenOneThenANewerOne (upstream's default cases): a pool of a
// class with no default at all waits, DefaultConfigNotFound, with no
// Deployment; a default appears and the pool takes it and gets its
// Deployment; a newer default wins and the pool moves to it.
func TestNoDefaultThenOneThenANewerOne(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	// A config that is not a default does not count.
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("not-a-default", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "waiting", "")))
	got := p.WaitForConfig(t, ns, "waiting", "", metav1.ConditionFalse)
	require.Equal(t, v1alpha1.ReasonDefaultConfigNotFound, producttest.ResolvedCondition(got).Reason)
	p.RequireNoDeployment(t, ns, "waiting")

	p.CreateAfterOthers(t, producttest.GVisorConfig("first", true))
	p.WaitForConfig(t, ns, "waiting", "first", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "waiting", 0)

	p.CreateAfterOthers(t, producttest.GVisorConfig("newer", true))
	p.WaitForConfig(t, ns, "waiting", "newer", metav1.ConditionTrue)
	p.WaitForEvents(t, ns, "waiting", []string{
		`Warning DefaultConfigNotFound: no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "first"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "first" to "newer"`,
	})
}

// TestADeletedDeploymentIsRecreated: the pool's Deployment deleted by hand
// comes back, as the pool asks for it, with no switch.
func TestADeletedDeploymentIsRecreated(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	wp := producttest.Pool(ns, "rebuilt", "")
	wp.Spec.Replicas = producttest.Ptr(int32(2))
	require.NoError(t, kube.Create(ctx, wp))
	p.WaitForConfig(t, ns, "rebuilt", "gvisor-default", metav1.ConditionTrue)
	old := p.WaitForDeployment(t, ns, "rebuilt", 2)

	require.NoError(t, kube.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rebuilt"}}))
	var back *appsv1.Deployment
	producttest.Eventually(t, "a new Deployment", func() (bool, string) {
		back = p.WaitForDeployment(t, ns, "rebuilt", 2)
		return back.UID != old.UID, "still the old one"
	})
	require.Equal(t, "WorkerPool", metav1.GetControllerOf(back).Kind)
	require.Equal(t, []string{`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`},
		p.Events(t, ns, "rebuilt"), "no switch")
}
