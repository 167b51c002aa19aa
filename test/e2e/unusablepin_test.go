package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestAPinNoConfigCanHaveKeepsThePoolScaling: a pool pinned to a name no
// SandboxConfig can have (namespaced, "..", a '%': names a GET cannot even
// send) is refused at admission, naming the field. One stored before that
// rule (the CRD's rule is taken off to make it, as a pool created before an
// upgrade) is kept on its config with the pin reported as not found, like
// any missing pinned config, and still scales; with the rule back, the
// pool still scales (the API server ratchets an unchanged field) and the
// name cannot be set again.
func TestAPinNoConfigCanHaveKeepsThePoolScaling(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("good", false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "odd", "good")))
	p.WaitForConfig(t, ns, "odd", "good", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "odd", 0)

	restore := dropConfigRefRule(t, kube)
	events := []string{`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "good"`}
	for i, name := range []string{"ate-system/gvisor-v2", "..", "a%b"} {
		producttest.Repin(t, kube, ns, "odd", name)
		generation := p.Get(t, ns, "odd").Generation
		got := p.WaitForConfig(t, ns, "odd", "good", metav1.ConditionFalse)
		c := producttest.ResolvedCondition(got)
		require.Equal(t, v1alpha1.ReasonSandboxConfigNotFound, c.Reason)
		want := fmt.Sprintf(`SandboxConfig %q not found; keeping "good"`, name)
		require.Equal(t, want, c.Message)
		summary := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
		require.Equal(t, metav1.ConditionFalse, summary.Status)
		require.Equal(t, v1alpha1.ReasonSandboxConfigNotFound, summary.Reason)
		require.Equal(t, generation, got.Status.ObservedGeneration, "the generation is acted on")
		events = append(events, "Warning SandboxConfigNotFound: "+want)
		p.WaitForEvents(t, ns, "odd", events)

		producttest.Scale(t, kube, ns, "odd", int32(i+1))
		p.WaitForDeployment(t, ns, "odd", int32(i+1))
	}

	restore()
	producttest.Scale(t, kube, ns, "odd", 5)
	p.WaitForDeployment(t, ns, "odd", 5)
	err := repin(ctx, kube, ns, "odd", "x/y")
	require.Error(t, err, "a name no config can have is refused at admission")
	require.Contains(t, err.Error(), "spec.sandboxClasses[0].configRef.name")
	require.Contains(t, err.Error(), "configRef.name must be a SandboxConfig's name")

	producttest.Repin(t, kube, ns, "odd", "good")
	p.WaitForConfig(t, ns, "odd", "good", metav1.ConditionTrue)
}

func repin(ctx context.Context, kube client.Client, ns, name, config string) error {
	var wp v1alpha1.WorkerPool
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp); err != nil {
		return err
	}
	base := wp.DeepCopy()
	wp.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: config}
	return kube.Patch(ctx, &wp, client.MergeFrom(base))
}

// dropConfigRefRule takes the WorkerPool CRD's rules off
// spec.sandboxClasses[].configRef, so a pool pinned to any name is admitted,
// as before those rules existed, and returns what puts them back (also
// done at cleanup). Each waits until the API server enforces the change.
func dropConfigRefRule(t *testing.T, kube client.Client) (restore func()) {
	t.Helper()
	ctx := context.Background()
	path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "sandboxClasses",
		"items", "properties", "configRef", "x-kubernetes-validations"}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	setRules := func(rules map[int][]any) {
		t.Helper()
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "workerpools." + v1alpha1.GroupVersion.Group}, crd))
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		require.NoError(t, err)
		for i := range versions {
			v := versions[i].(map[string]any)
			if r, ok := rules[i]; ok {
				require.NoError(t, unstructured.SetNestedSlice(v, r, path...))
			} else {
				unstructured.RemoveNestedField(v, path...)
			}
		}
		require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
		require.NoError(t, kube.Update(ctx, crd))
	}
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "workerpools." + v1alpha1.GroupVersion.Group}, crd))
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	saved := map[int][]any{}
	for i := range versions {
		if r, ok, _ := unstructured.NestedSlice(versions[i].(map[string]any), path...); ok {
			saved[i] = r
		}
	}
	// Whether the API server admits a pool pinned to "x/y" now.
	admits := func() (bool, string) {
		err := kube.Create(ctx, producttest.Pool("default", "probe", "x/y"), client.DryRunAll)
		return err == nil, fmt.Sprintf("dry run: %v", err)
	}
	setRules(nil)
	producttest.Eventually(t, "the API server to admit any configRef.name", admits)
	restored := false
	restore = func() {
		t.Helper()
		if restored {
			return
		}
		restored = true
		setRules(saved)
		if len(saved) == 0 {
			return // nothing was taken off
		}
		producttest.Eventually(t, "the API server to enforce the configRef rule again", func() (bool, string) {
			ok, state := admits()
			return !ok && strings.Contains(state, "configRef.name"), state
		})
	}
	t.Cleanup(restore)
	return restore
}
