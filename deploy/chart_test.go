package deploy_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
)

// helmLabels are the labels the chart adds to every object's metadata, by
// Helm's conventions, which `kustomize build deploy/` has not: the only
// difference the comparison ignores in the objects both have.
var helmLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// keepAnnotations are the annotations crds.keep (the default) adds to the
// chart's CRDs, which deploy/'s have not: uninstalling the chart keeps them,
// where `kubectl delete -k deploy/` deletes them.
var keepAnnotations = map[string]string{
	"helm.sh/resource-policy":         "keep",
	"argocd.argoproj.io/sync-options": "Delete=false",
}

// teardownHook is the chart's one object with no kustomize counterpart, with
// crds.keep=false: the pre-delete hook, which docs/install.md's "Uninstall"
// applies by hand.
const teardownHook = "Job ate-system/ate-orchestrator-teardown"

// releaseNamespace is kustomize's one object the chart has not: the
// namespace, which the chart takes from the release (`helm install -n
// ate-system --create-namespace`, then docs/install.md's Pod Security label).
const releaseNamespace = "Namespace ate-system"

// kustomizeImage is the image deploy/kustomization.yaml's images: sets,
// as the chart's values: repository and tag.
func kustomizeImage(t testing.TB) map[string]any {
	t.Helper()
	var k struct {
		Images []struct {
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
			Digest  string `yaml:"digest"`
		} `yaml:"images"`
	}
	b := readFile(t, "kustomization.yaml")
	require.NoError(t, yaml.Unmarshal(b, &k))
	require.Len(t, k.Images, 1)
	return map[string]any{"repository": k.Images[0].NewName, "tag": k.Images[0].NewTag, "digest": k.Images[0].Digest}
}

func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// byKey indexes objects by kind, namespace and name, with Helm's labels
// removed; it fails on a duplicate.
func byKey(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		o = o.DeepCopy()
		if l := o.GetLabels(); l != nil {
			for _, k := range helmLabels {
				delete(l, k)
			}
			o.SetLabels(l)
		}
		_, dup := out[key(o)]
		require.False(t, dup, "two objects %s", key(o))
		out[key(o)] = o
	}
	return out
}

func toYAML(t testing.TB, o *unstructured.Unstructured) string {
	t.Helper()
	b, err := sigsyaml.Marshal(o.Object)
	require.NoError(t, err)
	return string(b)
}

// renderChart renders deploy/chart with values over the image of the
// kustomization.
func renderChart(t testing.TB, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	v := map[string]any{"image": kustomizeImage(t)}
	for k, x := range values {
		v[k] = x
	}
	objs, err := helmchart.Render(v)
	require.NoError(t, err, "rendering deploy/chart")
	return objs
}

// requireSameObjects compares the chart's objects with kustomize's, each
// object whole once Helm's labels and the CRDs' keep annotations are
// removed; kustomize's Namespace is the release's, and the chart's objects
// named in onlyInChart have no counterpart.
//
// componentLabels are labels removed from the chart's objects that are not
// in deploy/ itself (a component's), for a component that lacks them.
func requireSameObjects(t *testing.T, chart, kustomize []*unstructured.Unstructured, onlyInChart []string, componentLabels ...string) {
	t.Helper()
	c, k := byKey(t, chart), byKey(t, kustomize)
	require.Contains(t, k, releaseNamespace)
	delete(k, releaseNamespace)
	require.NotContains(t, c, releaseNamespace, "the chart renders the release's namespace, which Helm cannot then own")
	for name, o := range c {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		a := o.GetAnnotations()
		for ak, av := range keepAnnotations {
			if a[ak] == av {
				delete(a, ak)
			}
		}
		o.SetAnnotations(a)
		c[name] = o
	}
	if len(componentLabels) > 0 {
		base := byKey(t, build(t))
		for name, o := range c {
			if _, ok := base[name]; ok {
				continue
			}
			l := o.GetLabels()
			for _, label := range componentLabels {
				delete(l, label)
			}
			o.SetLabels(l)
		}
	}
	for _, name := range onlyInChart {
		require.Contains(t, c, name, "the chart has no %s", name)
		delete(c, name)
	}
	require.Equal(t, slices.Sorted(maps.Keys(k)), slices.Sorted(maps.Keys(c)),
		"the chart's objects (left: kustomize build; right: the chart)")
	for name, ko := range k {
		require.Equal(t, toYAML(t, ko), toYAML(t, c[name]), "%s: kustomize build (expected) and the chart (actual) differ", name)
	}
}

// TestChartRendersTheKustomization: deploy/chart with its default values
// and the kustomization's image renders exactly `kustomize build deploy/`,
// but for the Namespace (the release's), Helm's labels and the CRDs' keep
// annotations; with crds.keep=false, plus the teardown hook.
func TestChartRendersTheKustomization(t *testing.T) {
	requireSameObjects(t, renderChart(t, nil), build(t), nil)
	requireSameObjects(t, renderChart(t, map[string]any{"crds": map[string]any{"keep": false}}), build(t), []string{teardownHook})
}

// Each optional component, turned on by its value, renders what the
// kustomize component adds to deploy/ in an overlay.
func TestChartComponentsRenderTheKustomizeComponents(t *testing.T) {
	for _, tc := range []struct {
		component string
		values    map[string]any
		// Labels of the chart's component objects that kustomize's lack.
		componentLabels []string
	}{
		// deploy/kustomization.yaml's labels: (part-of) do not reach a
		// component an overlay adds, and components/metrics does not set
		// it itself; the chart labels every object alike.
		{"metrics", map[string]any{"metrics": map[string]any{"component": map[string]any{"enabled": true}}}, []string{"app.kubernetes.io/part-of"}},
		{"networkpolicy", map[string]any{"networkPolicy": map[string]any{"enabled": true}}, nil},
	} {
		t.Run(tc.component, func(t *testing.T) {
			overlay := t.TempDir()
			// kustomize takes relative paths only.
			root, err := filepath.Rel(overlay, repoRoot(t))
			require.NoError(t, err)
			writeFile(t, filepath.Join(overlay, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s/deploy
components:
  - %[1]s/deploy/components/%[2]s
`, root, tc.component))
			requireSameObjects(t, renderChart(t, tc.values), buildDir(t, overlay), nil, tc.componentLabels...)
		})
	}
}

// With admissionPolicy.enabled, the chart renders what an overlay listing
// deploy/policy beside deploy/ does: the policy, its binding and its
// ConfigMap, the values' defaults being parameters.yaml's.
func TestChartAdmissionPolicyRendersDeployPolicy(t *testing.T) {
	overlay := t.TempDir()
	root, err := filepath.Rel(overlay, repoRoot(t))
	require.NoError(t, err)
	writeFile(t, filepath.Join(overlay, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s/deploy
  - %[1]s/deploy/policy
`, root))
	requireSameObjects(t, renderChart(t, map[string]any{"admissionPolicy": map[string]any{"enabled": true}}), buildDir(t, overlay), nil)
}

// The chart's copies of deploy/'s generated CRDs and roles (files/) are
// deploy/'s, byte for byte: `make generate` writes both.
func TestChartFilesAreDeploysFiles(t *testing.T) {
	want := map[string]string{
		"chart/files/rbac/worker.yaml":              "rbac/worker/role.yaml",
		"chart/files/rbac/starter.yaml":             "rbac/starter/role.yaml",
		"chart/files/rbac/users.yaml":               "rbac/users/roles.yaml",
		"chart/files/policy/workerpool-policy.yaml": "policy/workerpool-policy.yaml",
	}
	crds, err := filepath.Glob("crds/*.yaml")
	require.NoError(t, err)
	for _, c := range crds {
		want["chart/files/"+c] = c
	}
	copies, err := filepath.Glob("chart/files/*/*.yaml")
	require.NoError(t, err)
	// files/monitoring is no copy: `make monitoring` renders it from
	// deploy/monitoring's sources with a placeholder label
	// (deploy/monitoring's TestGeneratedFilesAreCurrent, and
	// TestChartMonitoring below).
	copies = slices.DeleteFunc(copies, func(p string) bool { return strings.HasPrefix(p, "chart/files/monitoring/") })
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), copies, "deploy/chart/files: run make generate")
	for chart, deploy := range want {
		require.Equal(t, string(readFile(t, deploy)), string(readFile(t, chart)),
			"deploy/%s is not deploy/%s: run make generate", chart, deploy)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
