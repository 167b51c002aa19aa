package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/test/producttest"
)

// TestAFailureIsReportedEachTimeItAppears: a failure that goes away and
// comes back, with no change to the pool's spec in between, is reported
// again; while it lasts it is reported once.
func TestAFailureIsReportedEachTimeItAppears(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("only", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "flaky", "")))
	p.WaitForConfig(t, ns, "flaky", "only", metav1.ConditionTrue)
	generation := p.Get(t, ns, "flaky").Generation

	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "only"`
	gone := `Warning DefaultConfigNotFound: no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "only"`
	producttest.SetDefault(t, kube, "only", false)
	p.WaitForConfig(t, ns, "flaky", "only", metav1.ConditionFalse)
	p.WaitForEvents(t, ns, "flaky", []string{uses, gone})

	producttest.SetDefault(t, kube, "only", true)
	p.WaitForConfig(t, ns, "flaky", "only", metav1.ConditionTrue)
	producttest.SetDefault(t, kube, "only", false)
	p.WaitForConfig(t, ns, "flaky", "only", metav1.ConditionFalse)
	p.WaitForEvents(t, ns, "flaky", []string{uses, gone, gone})
	require.Equal(t, generation, p.Get(t, ns, "flaky").Generation, "the spec did not change")

	// Looks that find the same failure report nothing more.
	p.Stop(t)
	p.Start(t)
	producttest.Scale(t, kube, ns, "flaky", 2)
	p.WaitForDeployment(t, ns, "flaky", 2)
	require.Equal(t, []string{uses, gone, gone}, p.Events(t, ns, "flaky"))
}
