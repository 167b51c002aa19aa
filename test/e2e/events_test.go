package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/producttest"
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

// TestAFailureThatChangesBackIsReportedAgain: a pinned pool's failure
// changes (re-pinned from one missing config to another) and changes back
// (re-pinned to the first), with the condition False throughout: each
// change is reported, the change back too, and the same failure seen again
// (a restart, a scale) is not.
func TestAFailureThatChangesBackIsReportedAgain(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("good", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "flip", "good")))
	p.WaitForConfig(t, ns, "flip", "good", metav1.ConditionTrue)

	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "good"`
	missingX := `Warning SandboxConfigNotFound: SandboxConfig "x" not found; keeping "good"`
	missingY := `Warning SandboxConfigNotFound: SandboxConfig "y" not found; keeping "good"`
	repinFailing := func(config string) {
		t.Helper()
		producttest.Repin(t, kube, ns, "flip", config)
		got := p.WaitForConfig(t, ns, "flip", "good", metav1.ConditionFalse)
		require.Equal(t, fmt.Sprintf(`SandboxConfig %q not found; keeping "good"`, config), producttest.ResolvedCondition(got).Message)
	}
	repinFailing("x")
	p.WaitForEvents(t, ns, "flip", []string{uses, missingX})
	repinFailing("y")
	p.WaitForEvents(t, ns, "flip", []string{uses, missingX, missingY})
	repinFailing("x")
	p.WaitForEvents(t, ns, "flip", []string{uses, missingX, missingY, missingX})

	// Looks that find the same failure report nothing more.
	p.Stop(t)
	p.Start(t)
	producttest.Scale(t, kube, ns, "flip", 2)
	p.WaitForDeployment(t, ns, "flip", 2)
	require.Equal(t, []string{uses, missingX, missingY, missingX}, p.Events(t, ns, "flip"))
}
