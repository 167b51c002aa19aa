package deploy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
)

// `helm install -n ops --create-namespace`: every namespaced object in the
// release's namespace, and every binding's ServiceAccount there too; the
// chart renders no Namespace, which Helm could then not create.
func TestChartInstallsInTheReleaseNamespace(t *testing.T) {
	objs, err := helmchart.RenderChartIn(helmchart.ChartDir(), "ops", map[string]any{"crds": map[string]any{"keep": false}})
	require.NoError(t, err)
	namespaced := 0
	for _, o := range objs {
		require.NotEqual(t, "Namespace", o.GetKind(), "the chart renders a Namespace")
		if o.GetNamespace() != "" {
			require.Equal(t, "ops", o.GetNamespace(), "%s", key(o))
			namespaced++
		}
		if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
			var b rbacv1.RoleBinding // a ClusterRoleBinding's subjects convert alike
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b))
			for _, s := range b.Subjects {
				require.Equal(t, "ops", s.Namespace, "%s binds %s", key(o), s.Name)
			}
		}
	}
	require.Greater(t, namespaced, 10)
}

// The chart as a dependency of an umbrella chart: Helm hands it the
// parent's `global` values, which its schema must allow, and its values
// under its name.
func TestChartRendersAsASubchart(t *testing.T) {
	parent := t.TempDir()
	writeFile(t, filepath.Join(parent, "Chart.yaml"), `apiVersion: v2
name: platform
version: 1.0.0
dependencies:
  - name: ate-orchestrator
    version: ">=0.0.0-0"
`)
	writeFile(t, filepath.Join(parent, "values.yaml"), `global:
  imageRegistry: registry.example
  storageClass: fast
ate-orchestrator:
  worker:
    replicas: 3
`)
	require.NoError(t, os.MkdirAll(filepath.Join(parent, "charts"), 0o755))
	require.NoError(t, os.CopyFS(filepath.Join(parent, "charts", "ate-orchestrator"), os.DirFS(helmchart.ChartDir())))

	objs, err := helmchart.RenderChart(parent, nil)
	require.NoError(t, err, "rendering deploy/chart as a subchart with global values")
	d := chartDeployments(t, objs)
	require.EqualValues(t, 3, *d["worker"].Spec.Replicas, "the parent's values reach the subchart")
	require.EqualValues(t, 2, *d["starter"].Spec.Replicas)

	// The same through --set on the chart itself.
	_, err = helmchart.Render(map[string]any{"global": map[string]any{"imageRegistry": "registry.example"}})
	require.NoError(t, err)
}

// NOTES.txt, what `helm install` prints: with crds.keep=false it warns
// that an uninstall deletes every WorkerPool and SandboxConfig, and their
// workers; by default it says they are kept.
func TestChartNotes(t *testing.T) {
	keep, err := helmchart.Notes(helmchart.ChartDir(), "ate-system", nil)
	require.NoError(t, err)
	require.Contains(t, keep, "kubectl -n ate-system rollout status deployment/ate-orchestrator-worker")
	require.Contains(t, keep, "kubectl label namespace ate-system pod-security.kubernetes.io/enforce=restricted")
	require.Contains(t, keep, "`helm uninstall` keeps the CRDs, every WorkerPool and SandboxConfig, and the pools' workers")
	require.NotContains(t, keep, "WARNING")

	drop, err := helmchart.Notes(helmchart.ChartDir(), "ops", map[string]any{"crds": map[string]any{"keep": false}})
	require.NoError(t, err)
	require.Contains(t, drop, "WARNING: crds.keep=false. `helm uninstall` deletes the CRDs, and with them every WorkerPool and\nSandboxConfig in the cluster; the garbage collector then deletes every pool's workers.")
	require.Contains(t, drop, "kubectl -n ops rollout status")
	require.NotContains(t, drop, "teardown.enabled=false")

	noHook, err := helmchart.Notes(helmchart.ChartDir(), "ate-system", map[string]any{"crds": map[string]any{"keep": false}, "teardown": map[string]any{"enabled": false}})
	require.NoError(t, err)
	require.Contains(t, noHook, "teardown.enabled=false: run docs/install.md's teardown Job before uninstalling")
}

// The admission policy's parameters: its ConfigMap in the release's
// namespace, which its (cluster-scoped) binding names.
func TestChartAdmissionPolicyInTheReleaseNamespace(t *testing.T) {
	objs, err := helmchart.RenderChartIn(helmchart.ChartDir(), "ate", map[string]any{
		"admissionPolicy": map[string]any{"enabled": true,
			"allowedRegistries": []any{"ghcr.io/my-org", "registry.example/ate"},
			"protectedNodeKeys": []any{"node-role.kubernetes.io/control-plane", "dedicated=infra"}},
	})
	require.NoError(t, err)
	var cm corev1.ConfigMap
	chartObject(t, objs, "ConfigMap", "ate", "ate-orchestrator-workerpool-policy", &cm)
	require.Equal(t, map[string]string{
		"allowedRegistries": "ghcr.io/my-org,registry.example/ate",
		"protectedNodeKeys": "node-role.kubernetes.io/control-plane\ndedicated=infra",
	}, cm.Data)
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	chartObject(t, objs, "ValidatingAdmissionPolicyBinding", "", "ate-orchestrator-workerpool", &binding)
	require.Equal(t, "ate", binding.Spec.ParamRef.Namespace, "the binding's parameters are the release namespace's ConfigMap")
	require.Equal(t, cm.Name, binding.Spec.ParamRef.Name)
}
