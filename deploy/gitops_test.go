package deploy_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
)

// gitopsDocuments are the YAML blocks of docs/gitops.md, by kind.
func gitopsDocuments(t *testing.T) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile("../docs/gitops.md")
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1) {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal(m[1], &o))
		out[o["kind"].(string)] = o
	}
	return out
}

// requireKeepsUsersObjects: every object in the release's namespace, no
// Namespace, no hook (Argo CD would not run it), and the CRDs kept by Argo
// CD (Delete=false) and Helm (keep).
func requireKeepsUsersObjects(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	crds := 0
	for _, o := range objs {
		require.NotEqual(t, "Namespace", o.GetKind())
		require.False(t, helmchart.IsHook(o), "%s: a hook Argo CD does not run", key(o))
		if o.GetNamespace() != "" {
			require.Equal(t, systemNamespace, o.GetNamespace(), key(o))
		}
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
			require.Equal(t, "Delete=false", o.GetAnnotations()["argocd.argoproj.io/sync-options"], key(o))
			require.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"], key(o))
		}
	}
	require.Equal(t, 2, crds)
}

// docs/gitops.md's Application and HelmRelease render, with their values
// and in their namespace, a chart whose deletion keeps the users' objects;
// the Application's "removing everything" values render no hook and CRDs
// that its deletion removes.
func TestGitOpsDocumentedReleases(t *testing.T) {
	docs := gitopsDocuments(t)
	app, ok := docs["Application"]
	require.True(t, ok, "docs/gitops.md has no Argo CD Application")
	spec := app["spec"].(map[string]any)
	ns := spec["destination"].(map[string]any)["namespace"].(string)
	require.Equal(t, systemNamespace, ns)
	require.Equal(t, "deploy/chart", spec["source"].(map[string]any)["path"])
	require.Contains(t, spec["syncPolicy"].(map[string]any)["syncOptions"], "ServerSideApply=true", "the CRDs are too large for client-side apply")
	require.Equal(t, "restricted",
		spec["syncPolicy"].(map[string]any)["managedNamespaceMetadata"].(map[string]any)["labels"].(map[string]any)["pod-security.kubernetes.io/enforce"])
	values := spec["source"].(map[string]any)["helm"].(map[string]any)["valuesObject"].(map[string]any)
	objs, err := helmchart.RenderChartIn(helmchart.ChartDir(), ns, values)
	require.NoError(t, err, "the Application's values")
	requireKeepsUsersObjects(t, objs)

	// Step 2 of "Removing everything under Argo CD".
	values["crds"] = map[string]any{"keep": false}
	values["teardown"] = map[string]any{"enabled": false}
	objs, err = helmchart.RenderChartIn(helmchart.ChartDir(), ns, values)
	require.NoError(t, err)
	for _, o := range objs {
		require.False(t, helmchart.IsHook(o), "%s: a hook Argo CD does not run", key(o))
		if o.GetKind() == "CustomResourceDefinition" {
			require.NotContains(t, o.GetAnnotations(), "argocd.argoproj.io/sync-options", key(o))
			require.NotContains(t, o.GetAnnotations(), "helm.sh/resource-policy", key(o))
		}
	}

	hr, ok := docs["HelmRelease"]
	require.True(t, ok, "docs/gitops.md has no Flux HelmRelease")
	md := hr["metadata"].(map[string]any)
	hrSpec := hr["spec"].(map[string]any)
	require.Equal(t, "deploy/chart", hrSpec["chart"].(map[string]any)["spec"].(map[string]any)["chart"])
	objs, err = helmchart.RenderChartIn(helmchart.ChartDir(), md["namespace"].(string), hrSpec["values"].(map[string]any))
	require.NoError(t, err, "the HelmRelease's values")
	requireKeepsUsersObjects(t, objs)
}
