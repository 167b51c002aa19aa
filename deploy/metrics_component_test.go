package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"ate.dev/orchestrator/internal/testenv"
)

// buildWithMetrics builds an overlay of deploy/ with the optional
// components/metrics, as a user's overlay would.
func buildWithMetrics(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	// kustomize takes relative paths only.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, p))
		require.NoError(t, err)
		return r
	}
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " +
		rel("deploy") + "\ncomponents:\n  - " + rel("deploy/components/metrics") + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600))
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build of an overlay with deploy/components/metrics")
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(b), "%s", r.CurId())
		objs = append(objs, u)
	}
	return objs
}

// The metrics component renders a Service and a PodMonitor that reach the
// worker's and the starter's metrics port, and a scraper identity that may
// get /metrics and nothing else; deploy/ alone has none of them.
func TestMetricsComponent(t *testing.T) {
	base := build(t)
	for _, o := range base {
		require.NotEqual(t, "PodMonitor", o.GetKind(), "the PodMonitor is optional: deploy/ alone must not need the Prometheus Operator")
		require.NotEqual(t, "Service", o.GetKind(), "the metrics Service is in the optional component")
	}
	// The reader role is in the base: any Prometheus can be bound to it.
	var reader rbacv1.ClusterRole
	require.True(t, find(t, base, "ClusterRole", "ate-orchestrator-metrics-reader", &reader))
	require.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)

	objs := buildWithMetrics(t)
	var svc corev1.Service
	require.True(t, find(t, objs, "Service", "ate-orchestrator-metrics", &svc))
	require.Equal(t, systemNamespace, svc.Namespace)
	require.Len(t, svc.Spec.Ports, 1)
	selector := labels.SelectorFromSet(svc.Spec.Selector)

	var pm unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "PodMonitor" {
			pm = *o
		}
	}
	require.Equal(t, "monitoring.coreos.com/v1", pm.GetAPIVersion(), "the component has a PodMonitor")
	require.Equal(t, systemNamespace, pm.GetNamespace(), "the PodMonitor is beside the pods and the token Secret it names")
	pmLabels, _, err := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	require.NoError(t, err)
	pmSelector := labels.SelectorFromSet(pmLabels)
	endpoints, _, err := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	require.NoError(t, err)
	require.Len(t, endpoints, 1)
	ep := endpoints[0].(map[string]any)
	require.Equal(t, "https", ep["scheme"])
	require.Equal(t, "/metrics", ep["path"])
	secretName, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")

	for _, name := range []string{"worker", "starter"} {
		var d appsv1.Deployment
		require.True(t, find(t, objs, "Deployment", "ate-orchestrator-"+name, &d))
		podLabels := labels.Set(d.Spec.Template.Labels)
		require.True(t, selector.Matches(podLabels), "the Service's selector %v selects the %s's pods %v", svc.Spec.Selector, name, podLabels)
		require.True(t, pmSelector.Matches(podLabels), "the PodMonitor's selector %v selects the %s's pods %v", pmLabels, name, podLabels)
		c := d.Spec.Template.Spec.Containers[0]
		port := containerPort(c, svc.Spec.Ports[0].TargetPort)
		require.NotNil(t, port, "the Service's targetPort %v is a port of the %s's container %v", svc.Spec.Ports[0].TargetPort, name, c.Ports)
		require.Equal(t, "metrics", port.Name)
		require.NotNil(t, containerPort(c, intstr.FromString(ep["port"].(string))), "the PodMonitor's port %v is a port of the %s's container", ep["port"], name)
	}

	// The scraper: a ServiceAccount, its token Secret (which the PodMonitor
	// sends), bound to the reader role only.
	find(t, objs, "ServiceAccount", "ate-orchestrator-metrics-scraper", nil)
	var token corev1.Secret
	require.True(t, find(t, objs, "Secret", secretName, &token), "the Secret the PodMonitor's authorization names")
	require.Equal(t, corev1.SecretTypeServiceAccountToken, token.Type)
	require.Equal(t, "ate-orchestrator-metrics-scraper", token.Annotations[corev1.ServiceAccountNameKey])
	var crb rbacv1.ClusterRoleBinding
	require.True(t, find(t, objs, "ClusterRoleBinding", "ate-orchestrator-metrics-scraper", &crb))
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ate-orchestrator-metrics-reader"}, crb.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ate-orchestrator-metrics-scraper", Namespace: systemNamespace}}, crb.Subjects)

	// The deployed processes serve their metrics securely.
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetNamespace() == systemNamespace {
			v, _, _ := unstructured.NestedString(o.Object, "data", "METRICS_SECURE")
			require.Contains(t, []string{"", "true"}, v, "the deployed metrics endpoint is HTTPS with authn/authz (the default)")
		}
	}
}

// containerPort is the container's port a Service targetPort or a
// PodMonitor port names.
func containerPort(c corev1.Container, p intstr.IntOrString) *corev1.ContainerPort {
	i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool {
		if p.Type == intstr.String {
			return cp.Name == p.StrVal
		}
		return cp.ContainerPort == p.IntVal
	})
	if i < 0 {
		return nil
	}
	return &c.Ports[i]
}

// The component's objects, but the PodMonitor (whose CRD the test API
// server lacks), are valid for a real API server (server-side apply, dry
// run).
func TestMetricsComponentAppliesToAPIServer(t *testing.T) {
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := client.FieldOwner("ate-deploy-test")
	for _, o := range buildWithMetrics(t) {
		if o.GetKind() == "Namespace" {
			require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership))
		}
	}
	applied := 0
	for _, o := range buildWithMetrics(t) {
		if o.GetLabels()["app.kubernetes.io/component"] != "metrics" && o.GetName() != "ate-orchestrator-metrics-reader" {
			continue
		}
		if o.GetKind() == "PodMonitor" {
			continue
		}
		require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership, client.DryRunAll),
			"server-side apply (dry run) of %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		applied++
	}
	require.Equal(t, 5, applied, "the reader role, the scraper's ServiceAccount, Secret and binding, and the Service")
}
