package helmchart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func images(t *testing.T, path string, values map[string]any) map[string]string {
	t.Helper()
	objs, err := helmchart.RenderChart(path, values)
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" && o.GetKind() != "Job" {
			continue
		}
		var pod []any
		if o.GetKind() != "" {
			pod, _, _ = unstructuredContainers(o.Object)
		}
		for _, c := range pod {
			out[o.GetName()] = c.(map[string]any)["image"].(string)
		}
	}
	return out
}

func unstructuredContainers(o map[string]any) ([]any, bool, error) {
	spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cs, ok := spec["containers"].([]any)
	return cs, ok, nil
}

// Render gives every object once, the hook (crds.keep=false) last, marked
// as a hook.
func TestRender(t *testing.T) {
	noKeep := map[string]any{"crds": map[string]any{"keep": false}}
	objs, err := helmchart.Render(noKeep)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	// Helm's install order: the CRDs before the roles and the Deployments.
	kinds := []string{}
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	crd, role, deployment := slices.Index(kinds, "CustomResourceDefinition"), slices.Index(kinds, "ClusterRole"), slices.Index(kinds, "Deployment")
	require.True(t, crd >= 0 && crd < role && role < deployment, "kinds in the order %v", kinds)
	last := objs[len(objs)-1]
	require.True(t, helmchart.IsHook(last))
	require.Equal(t, "Job", last.GetKind())
	for _, o := range objs[:len(objs)-1] {
		require.False(t, helmchart.IsHook(o), "%s %s", o.GetKind(), o.GetName())
	}
	require.Equal(t, map[string]string{
		"ate-orchestrator-worker":   "ate-orchestrator:dev",
		"ate-orchestrator-starter":  "ate-orchestrator:dev",
		"ate-orchestrator-teardown": "ate-orchestrator:dev",
	}, images(t, helmchart.ChartDir(), noKeep), "the default image is the chart's appVersion, as the kustomization's")
}

// Package writes a chart of the release's version whose values pin the
// image by digest, and leaves the chart directory as it was.
func TestPackage(t *testing.T) {
	before, err := os.ReadFile(filepath.Join(helmchart.ChartDir(), "values.yaml"))
	require.NoError(t, err)
	out := t.TempDir()
	for _, tc := range []struct{ image, tag string }{
		{"registry.example/ate/orchestrator:v1.2.3@" + digest, "v1.2.3"},
		{"localhost:5000/ate@" + digest, "v1.2.3"},
	} {
		path, err := helmchart.Package(helmchart.ChartDir(), out, "v1.2.3", tc.image)
		require.NoError(t, err, tc.image)
		require.Equal(t, filepath.Join(out, "ate-orchestrator-1.2.3.tgz"), path)
		ch, err := loader.Load(path)
		require.NoError(t, err)
		require.Equal(t, "1.2.3", ch.Metadata.Version)
		require.Equal(t, "v1.2.3", ch.Metadata.AppVersion)
		repo := strings.TrimSuffix(strings.Split(tc.image, "@")[0], ":v1.2.3")
		require.Equal(t, map[string]any{"repository": repo, "tag": tc.tag, "digest": digest, "pullPolicy": ""}, ch.Values["image"])
		for name, image := range images(t, path, nil) {
			require.Equal(t, repo+"@"+digest, image, name)
		}
		// The packaged values.yaml keeps its documentation.
		for _, f := range ch.Raw {
			if f.Name == "values.yaml" {
				require.Contains(t, string(f.Data), "# -- Digest (`sha256:...`); when set it wins over the tag.")
				_, err := helmchart.ValuesTable(f.Data)
				require.NoError(t, err)
			}
		}
		require.NoError(t, helmchart.Lint(path, nil))
	}
	after, err := os.ReadFile(filepath.Join(helmchart.ChartDir(), "values.yaml"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))

	for _, bad := range []string{"registry.example/ate:v1.2.3", "registry.example/ate@sha256:abc", ""} {
		_, err := helmchart.Package(helmchart.ChartDir(), out, "v1.2.3", bad)
		require.ErrorContains(t, err, "pinned by digest", bad)
	}
	// A build between tags (git describe) is packaged as a pre-release.
	path, err := helmchart.Package(helmchart.ChartDir(), out, "4c38746-dirty", "r@"+digest)
	require.NoError(t, err)
	require.Equal(t, "ate-orchestrator-0.0.0-4c38746-dirty.tgz", filepath.Base(path))
}

// Lint fails on a chart Helm's linter refuses.
func TestLintFails(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: broken\nversion: 0.1.0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "x.yaml"), []byte("kind: ConfigMap\nmetadata: {name: {{ .Values.missing.field }}}\n"), 0o644))
	require.Error(t, helmchart.Lint(dir, nil))
}

// deploy/chart/README.md's table of values is ValuesTable of values.yaml.
func TestREADMEValuesTable(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(helmchart.ChartDir(), "values.yaml"))
	require.NoError(t, err)
	want, err := helmchart.ValuesTable(values)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(helmchart.ChartDir(), "README.md"))
	require.NoError(t, err)
	const begin, end = "<!-- values:begin -->\n", "<!-- values:end -->"
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	require.True(t, i >= 0 && j > i, "deploy/chart/README.md has no %q ... %q section", begin, end)
	if got := string(readme)[i+len(begin) : j]; got != want {
		t.Errorf("deploy/chart/README.md's values table is not values.yaml's; replace it with:\n%s", want)
	}
}

func TestValuesTableRefusesUndocumented(t *testing.T) {
	_, err := helmchart.ValuesTable([]byte("a:\n  # -- documented\n  b: 1\n  c: 2\n"))
	require.ErrorContains(t, err, "a.c has no")
	tbl, err := helmchart.ValuesTable([]byte("# -- The resources.\nresources:\n  limits: {cpu: 1}\n# -- x | y\nname: \"\"\n"))
	require.NoError(t, err)
	require.Equal(t, "| Key | Default | Description |\n|---|---|---|\n| `resources` | `{\"limits\":{\"cpu\":1}}` | The resources. |\n| `name` | `\"\"` | x \\| y |\n", tbl)
}
