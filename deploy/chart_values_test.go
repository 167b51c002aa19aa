package deploy_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/internal/testenv"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// chartObject converts the chart's object of a kind and name to out.
func chartObject(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string, out any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && o.GetNamespace() == namespace {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out))
			return
		}
	}
	t.Fatalf("the chart renders no %s %s/%s", kind, namespace, name)
}

func chartDeployments(t *testing.T, objs []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, p := range []string{"worker", "starter"} {
		d := &appsv1.Deployment{}
		chartObject(t, objs, "Deployment", systemNamespace, "ate-orchestrator-"+p, d)
		out[p] = d
	}
	return out
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func TestChartValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{
			name: "digest wins over the tag",
			values: map[string]any{"image": map[string]any{
				"repository": "registry.example/ate/orchestrator", "tag": "v0.1.0", "digest": testDigest},
				"crds": map[string]any{"keep": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				want := "registry.example/ate/orchestrator@" + testDigest
				for p, d := range chartDeployments(t, objs) {
					require.Equal(t, want, d.Spec.Template.Spec.Containers[0].Image, p)
				}
				var job batchv1.Job
				chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
				require.Equal(t, want, job.Spec.Template.Spec.Containers[0].Image, "the teardown hook")
			},
		},
		{
			name:   "tag without digest",
			values: map[string]any{"image": map[string]any{"repository": "registry.example/ate/orchestrator", "tag": "v0.1.0", "digest": ""}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					require.Equal(t, "registry.example/ate/orchestrator:v0.1.0", d.Spec.Template.Spec.Containers[0].Image, p)
				}
			},
		},
		{
			name: "Secret names reach both Deployments",
			values: map[string]any{"temporal": map[string]any{
				"apiKeySecret": "my-api-key", "tlsSecret": "my-mtls"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					pod := d.Spec.Template.Spec
					var secrets []string
					for _, e := range pod.Containers[0].EnvFrom {
						if e.SecretRef != nil {
							require.True(t, *e.SecretRef.Optional, "%s: envFrom Secret %s not optional", p, e.SecretRef.Name)
							secrets = append(secrets, e.SecretRef.Name)
						}
					}
					require.Equal(t, []string{"my-api-key"}, secrets, p)
					var tls []string
					for _, v := range pod.Volumes {
						if v.Secret != nil {
							require.True(t, *v.Secret.Optional, p)
							tls = append(tls, v.Secret.SecretName)
						}
					}
					require.Equal(t, []string{"my-mtls"}, tls, p)
					require.True(t, slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
						return m.MountPath == "/etc/ate/temporal-tls"
					}), "%s: the TLS Secret is not mounted at /etc/ate/temporal-tls", p)
				}
			},
		},
		{
			name:   "no Secrets",
			values: map[string]any{"temporal": map[string]any{"apiKeySecret": "", "tlsSecret": ""}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					pod := d.Spec.Template.Spec
					for _, e := range pod.Containers[0].EnvFrom {
						require.Nil(t, e.SecretRef, p)
					}
					for _, v := range pod.Volumes {
						require.Nil(t, v.Secret, p)
					}
					for _, m := range pod.Containers[0].VolumeMounts {
						require.NotEqual(t, "/etc/ate/temporal-tls", m.MountPath, p)
					}
				}
			},
		},
		{
			name: "replicas and resources",
			values: map[string]any{
				"worker":  map[string]any{"replicas": 5, "resources": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "1Gi"}}},
				"starter": map[string]any{"replicas": 1},
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := chartDeployments(t, objs)
				require.EqualValues(t, 5, *ds["worker"].Spec.Replicas)
				require.EqualValues(t, 1, *ds["starter"].Spec.Replicas)
				lim := ds["worker"].Spec.Template.Spec.Containers[0].Resources.Limits
				require.Equal(t, "2", lim.Cpu().String())
				require.Equal(t, "1Gi", lim.Memory().String())
			},
		},
		{
			name: "leader election off, one replica each",
			values: map[string]any{
				"leaderElection": map[string]any{"enabled": false},
				"worker":         map[string]any{"replicas": 1},
				"starter":        map[string]any{"replicas": 1},
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					v, _ := envValue(d.Spec.Template.Spec.Containers[0], "LEADER_ELECT")
					require.Equal(t, "false", v, p)
				}
			},
		},
		{
			name:   "leader election in another namespace",
			values: map[string]any{"leaderElection": map[string]any{"namespace": "ate-leases"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					c := d.Spec.Template.Spec.Containers[0]
					v, _ := envValue(c, "LEADER_ELECT")
					require.Equal(t, "true", v, p)
					v, _ = envValue(c, "LEADER_ELECTION_NAMESPACE")
					require.Equal(t, "ate-leases", v, p)
					// Its Role and RoleBinding are where the Lease is.
					var role rbacv1.Role
					chartObject(t, objs, "Role", "ate-leases", "ate-orchestrator-"+p, &role)
					var rb rbacv1.RoleBinding
					chartObject(t, objs, "RoleBinding", "ate-leases", "ate-orchestrator-"+p, &rb)
					require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ate-orchestrator-" + p, Namespace: systemNamespace}}, rb.Subjects)
				}
			},
		},
		{
			name:   "no PodDisruptionBudgets",
			values: map[string]any{"podDisruptionBudget": map[string]any{"enabled": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, o := range objs {
					require.NotEqual(t, "PodDisruptionBudget", o.GetKind())
				}
			},
		},
		{
			name:   "extraConfig joins the ConfigMap, under a new name",
			values: map[string]any{"extraConfig": map[string]any{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "ATE_ACTIVITY_TASK_POLLERS": 4}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				var cm *unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind() == "ConfigMap" {
						cm = o
					}
				}
				require.NotNil(t, cm)
				data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
				require.Equal(t, "http://otel:4318", data["OTEL_EXPORTER_OTLP_ENDPOINT"])
				require.Equal(t, "4", data["ATE_ACTIVITY_TASK_POLLERS"])
				for _, o := range build(t) {
					if o.GetKind() == "ConfigMap" {
						require.NotEqual(t, o.GetName(), cm.GetName(), "a changed setting must rename the ConfigMap, to roll the Deployments")
					}
				}
				for p, d := range chartDeployments(t, objs) {
					require.Equal(t, cm.GetName(), d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name, p)
				}
			},
		},
		{
			name:   "CRDs kept on uninstall by default, and no teardown hook",
			values: nil,
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				n := 0
				for _, o := range objs {
					require.False(t, helmchart.IsHook(o), "%s %s: kept CRDs keep the configs and their protection", o.GetKind(), o.GetName())
					if o.GetKind() == "CustomResourceDefinition" {
						require.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"], o.GetName())
						require.Equal(t, "Delete=false", o.GetAnnotations()["argocd.argoproj.io/sync-options"], o.GetName())
						n++
					}
				}
				require.Equal(t, 2, n)
			},
		},
		{
			name:   "crds.keep=false: CRDs deleted on uninstall, after the teardown hook",
			values: map[string]any{"crds": map[string]any{"keep": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, o := range objs {
					if o.GetKind() == "CustomResourceDefinition" {
						require.NotContains(t, o.GetAnnotations(), "helm.sh/resource-policy", o.GetName())
						require.NotContains(t, o.GetAnnotations(), "argocd.argoproj.io/sync-options", o.GetName())
					}
				}
				var job batchv1.Job
				chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
			},
		},
		{
			name:   "no teardown hook",
			values: map[string]any{"teardown": map[string]any{"enabled": false}, "crds": map[string]any{"keep": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, o := range objs {
					require.False(t, helmchart.IsHook(o), "%s %s", o.GetKind(), o.GetName())
					require.NotEqual(t, "Job", o.GetKind())
				}
			},
		},
		{
			name: "pod labels and annotations, beside the selector's labels",
			values: map[string]any{
				"podLabels":      map[string]any{"team": "platform", "app.kubernetes.io/component": "ignored"},
				"podAnnotations": map[string]any{"example.com/scrape": "false"},
				"crds":           map[string]any{"keep": false},
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					require.Equal(t, map[string]string{"team": "platform", "app.kubernetes.io/name": "ate-orchestrator", "app.kubernetes.io/component": p},
						d.Spec.Template.Labels, "%s: the pod's own labels win, so the selector still selects it", p)
					require.Equal(t, map[string]string{"app.kubernetes.io/name": "ate-orchestrator", "app.kubernetes.io/component": p}, d.Spec.Selector.MatchLabels, p)
					require.Equal(t, map[string]string{"example.com/scrape": "false"}, d.Spec.Template.Annotations, p)
				}
				var job batchv1.Job
				chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
				require.Equal(t, "platform", job.Spec.Template.Labels["team"])
				require.Equal(t, "teardown", job.Spec.Template.Labels["app.kubernetes.io/component"])
				require.Equal(t, "false", job.Spec.Template.Annotations["example.com/scrape"])
			},
		},
		{
			name:   "priorityClassName",
			values: map[string]any{"priorityClassName": "system-cluster-critical", "crds": map[string]any{"keep": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					require.Equal(t, "system-cluster-critical", d.Spec.Template.Spec.PriorityClassName, p)
				}
				var job batchv1.Job
				chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
				require.Equal(t, "system-cluster-critical", job.Spec.Template.Spec.PriorityClassName)
			},
		},
		{
			// deploy/README.md's Temporal profile file, mounted from a Secret.
			name: "extraEnv, extraVolumes and extraVolumeMounts: a Temporal profile file",
			values: map[string]any{
				"extraEnv": []any{
					map[string]any{"name": "TEMPORAL_CONFIG_FILE", "value": "/etc/ate/temporal-profile/temporal.toml"},
					map[string]any{"name": "TEMPORAL_PROFILE", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "profile", "key": "name"}}},
				},
				"extraVolumes":      []any{map[string]any{"name": "temporal-profile", "secret": map[string]any{"secretName": "temporal-profile"}}},
				"extraVolumeMounts": []any{map[string]any{"name": "temporal-profile", "mountPath": "/etc/ate/temporal-profile", "readOnly": true}},
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					pod := d.Spec.Template.Spec
					c := pod.Containers[0]
					v, ok := envValue(c, "TEMPORAL_CONFIG_FILE")
					require.True(t, ok, p)
					require.Equal(t, "/etc/ate/temporal-profile/temporal.toml", v, p)
					require.Equal(t, "LEADER_ELECT", c.Env[0].Name, p)
					require.Equal(t, "TEMPORAL_PROFILE", c.Env[len(c.Env)-1].Name, p)
					require.Equal(t, "profile", c.Env[len(c.Env)-1].ValueFrom.ConfigMapKeyRef.Name, p)
					require.Equal(t, "temporal-profile", pod.Volumes[len(pod.Volumes)-1].Secret.SecretName, p)
					require.Equal(t, corev1.VolumeMount{Name: "temporal-profile", MountPath: "/etc/ate/temporal-profile", ReadOnly: true}, c.VolumeMounts[len(c.VolumeMounts)-1], p)
					require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "tmp" }), "%s keeps its /tmp", p)
				}
			},
		},
		{
			// OpenShift's restricted SCC refuses a runAsUser outside the
			// namespace's range and assigns one itself.
			name: "podSecurityContext without runAsUser and runAsGroup (OpenShift)",
			values: map[string]any{
				"podSecurityContext": map[string]any{"runAsUser": nil, "runAsGroup": nil},
				"crds":               map[string]any{"keep": false},
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				var job batchv1.Job
				chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
				pods := []corev1.PodSpec{job.Spec.Template.Spec}
				for _, d := range chartDeployments(t, objs) {
					pods = append(pods, d.Spec.Template.Spec)
				}
				for _, pod := range pods {
					sc := pod.SecurityContext
					require.Nil(t, sc.RunAsUser)
					require.Nil(t, sc.RunAsGroup)
					require.True(t, *sc.RunAsNonRoot, "the rest of the default stays")
					require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
					require.True(t, *pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem)
				}
			},
		},
		{
			name:   "securityContext of the containers",
			values: map[string]any{"securityContext": map[string]any{"readOnlyRootFilesystem": false}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for p, d := range chartDeployments(t, objs) {
					sc := d.Spec.Template.Spec.Containers[0].SecurityContext
					require.False(t, *sc.ReadOnlyRootFilesystem, p)
					require.False(t, *sc.AllowPrivilegeEscalation, "%s: the other defaults stay", p)
					require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, p)
				}
			},
		},
		{
			name:   "the NetworkPolicy follows the Temporal port",
			values: map[string]any{"networkPolicy": map[string]any{"enabled": true}, "temporal": map[string]any{"address": "temporal.example:7243"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				var np networkingv1.NetworkPolicy
				chartObject(t, objs, "NetworkPolicy", systemNamespace, "ate-orchestrator-allow-temporal", &np)
				require.Equal(t, 7243, np.Spec.Egress[0].Ports[0].Port.IntValue())
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, renderChart(t, tc.values))
		})
	}
}

// Two replicas without leader election would both run their controllers:
// the chart refuses to render them.
func TestChartRefusesTwoReplicasWithoutLeaderElection(t *testing.T) {
	_, err := helmchart.Render(map[string]any{"leaderElection": map[string]any{"enabled": false}})
	require.ErrorContains(t, err, "leaderElection.enabled=false needs")
}

// The pre-delete hook runs teardown as the worker's ServiceAccount, whose
// ClusterRole (bound by the release, and deleted only after the hook)
// grants what teardown does: list SandboxConfigs, get and patch each.
func TestChartTeardownHook(t *testing.T) {
	objs := renderChart(t, map[string]any{"crds": map[string]any{"keep": false}})
	var job batchv1.Job
	chartObject(t, objs, "Job", systemNamespace, "ate-orchestrator-teardown", &job)
	require.Equal(t, map[string]string{
		"helm.sh/hook":               "pre-delete",
		"helm.sh/hook-weight":        "0",
		"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
	}, job.Annotations)
	require.NotNil(t, job.Spec.BackoffLimit)
	require.NotNil(t, job.Spec.ActiveDeadlineSeconds)
	pod := job.Spec.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, []string{"/usr/local/bin/teardown"}, c.Command)
	require.Contains(t, imageCommands(t, ""), c.Command[0], "a command of the image")
	for _, e := range c.Env {
		require.Contains(t, envNames(t, "teardown"), e.Name, "the hook sets a variable teardown does not read")
	}
	// The restricted security context of the Deployments.
	d := chartDeployments(t, objs)["worker"]
	require.Equal(t, d.Spec.Template.Spec.SecurityContext, pod.SecurityContext)
	require.Equal(t, d.Spec.Template.Spec.Containers[0].SecurityContext, c.SecurityContext)
	// The NetworkPolicy component lets it out (its pod has the label the
	// policies select).
	require.Equal(t, "ate-orchestrator", job.Spec.Template.Labels["app.kubernetes.io/name"])

	sa := pod.ServiceAccountName
	require.Equal(t, "ate-orchestrator-worker", sa)
	var account corev1.ServiceAccount
	chartObject(t, objs, "ServiceAccount", systemNamespace, sa, &account)
	require.False(t, helmchart.IsHook(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": toAny(account.Annotations)}}}),
		"the ServiceAccount must be a release object, deleted after the pre-delete hook")
	var granted []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var crb rbacv1.ClusterRoleBinding
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crb))
		if !slices.Contains(crb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: systemNamespace}) {
			continue
		}
		require.False(t, helmchart.IsHook(o))
		var cr rbacv1.ClusterRole
		chartObject(t, objs, "ClusterRole", "", crb.RoleRef.Name, &cr)
		granted = append(granted, cr.Rules...)
	}
	for _, verb := range []string{"list", "get", "patch"} {
		require.True(t, slices.ContainsFunc(granted, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, "ate.dev") && slices.Contains(r.Resources, "sandboxconfigs") && slices.Contains(r.Verbs, verb)
		}), "the worker's ClusterRoles do not grant %s on sandboxconfigs, which teardown needs", verb)
	}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Every ServiceAccount a pod of the documentation runs as exists in
// `kustomize build deploy/`: the documented teardown Job once named one
// that did not, and its pod was never created.
func TestDocumentedServiceAccountsExist(t *testing.T) {
	accounts := map[string]bool{}
	for _, o := range build(t) {
		if o.GetKind() == "ServiceAccount" {
			accounts[o.GetName()] = true
		}
	}
	re := regexp.MustCompile(`serviceAccountName:\s*"?([a-z0-9.-]+)`)
	for _, doc := range []string{"README.md", "chart/README.md", "../README.md", "../docs/install.md"} {
		b, err := os.ReadFile(doc)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			require.True(t, accounts[m[1]], "%s names the ServiceAccount %s, which kustomize build deploy/ does not have (it has %v)", doc, m[1], accounts)
		}
	}
	// The teardown Job of docs/install.md, parsed.
	readme, err := os.ReadFile("../docs/install.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)kubectl -n ate-system apply --server-side -f - <<'EOF'\n(.*?)\nEOF\n`).FindSubmatch(readme)
	require.NotNil(t, m, "docs/install.md has no teardown Job applied with a here-document")
	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict(m[1], &job))
	require.True(t, accounts[job.Spec.Template.Spec.ServiceAccountName], "docs/install.md's teardown Job runs as %q", job.Spec.Template.Spec.ServiceAccountName)
	require.Equal(t, "ate-orchestrator-worker", job.Spec.Template.Spec.ServiceAccountName, "the ServiceAccount allowed to patch SandboxConfigs")
}

// The chart passes `helm lint --strict`, with its defaults and with every
// optional part on.
func TestChartLint(t *testing.T) {
	for _, values := range []map[string]any{
		nil,
		{
			"metrics":         map[string]any{"component": map[string]any{"enabled": true}},
			"networkPolicy":   map[string]any{"enabled": true},
			"admissionPolicy": map[string]any{"enabled": true},
			"image":           map[string]any{"digest": testDigest},
		},
	} {
		require.NoError(t, helmchart.Lint(helmchart.ChartDir(), values))
	}
}

// The documentation applies deploy/ server-side only: the CRDs are too
// large for client-side apply's last-applied annotation, and the
// kustomization's header and this README once disagreed.
func TestDocumentedAppliesAreServerSide(t *testing.T) {
	apply := regexp.MustCompile(`kubectl\s+(?:-n\s+\S+\s+)?apply\s[^\n]*-[kf]\b[^\n]*`)
	found := 0
	for _, doc := range []string{"README.md", "../docs/install.md", "kustomization.yaml", "chart/README.md", "components/metrics/kustomization.yaml", "components/networkpolicy/kustomization.yaml"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range apply.FindAllString(string(b), -1) {
			require.Contains(t, m, "--server-side", "deploy/%s: %q", doc, m)
			found++
		}
	}
	require.GreaterOrEqual(t, found, 3, "the pattern no longer finds docs/install.md's and the kustomization's applies")
}

// Every object of the chart, its hook, the NetworkPolicy component, the
// worker's Prometheus volumes and the admission policy (its expressions
// compiled by the API server) included, is valid for a real API server
// (server-side apply, dry run), as
// TestKustomizeAppliesToAPIServer checks deploy/'s. The PodMonitor needs the
// Prometheus Operator's CRDs, which the test API server has not.
func TestChartAppliesToAPIServer(t *testing.T) {
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := renderChart(t, map[string]any{
		"networkPolicy":   map[string]any{"enabled": true},
		"admissionPolicy": map[string]any{"enabled": true},
		"image":           map[string]any{"digest": testDigest},
		"crds":            map[string]any{"keep": false},
		"worker": map[string]any{"prometheus": map[string]any{
			"url":               "https://prometheus.monitoring.svc:9091",
			"bearerTokenSecret": map[string]any{"name": "prometheus-token"},
			"ca":                map[string]any{"configMap": "prometheus-ca"},
		}},
	})
	owner := client.FieldOwner("ate-chart-test")
	// The release's namespace, as `helm install --create-namespace` makes it.
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": systemNamespace}}}
	require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(ns), owner, client.ForceOwnership))
	for _, o := range objs {
		err := env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership, client.DryRunAll)
		require.NoError(t, err, "server-side apply (dry run) of %s", key(o))
	}
}

// values.schema.json refuses a value the chart does not have (a typo
// would otherwise be ignored) and one of the wrong shape.
func TestChartValuesSchema(t *testing.T) {
	for _, bad := range []map[string]any{
		{"replicas": 3},
		{"worker": map[string]any{"replica": 3}},
		{"image": map[string]any{"digest": "sha256:abc"}},
		{"logLevel": "verbose"},
		{"extraConfig": map[string]any{"lower_case": "x"}},
	} {
		_, err := helmchart.Render(bad)
		require.Error(t, err, "%v", bad)
		require.Contains(t, err.Error(), "schema", "%v", bad)
	}
}
