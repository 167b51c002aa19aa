package deploy_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/worker"
)

const systemNamespace = "ate-system"

// build runs `kustomize build deploy/` with kustomize's library.
func build(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	return buildDir(t, ".")
}

// buildDir runs `kustomize build dir`.
func buildDir(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON, for the numbers' types unstructured wants.
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		objs = append(objs, u)
	}
	return objs
}

// find tells whether the build has an object of a kind and name and
// converts it to out, unless out is nil.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string, out any) bool {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if out == nil {
				return true
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return true
		}
	}
	t.Errorf("kustomize build deploy/ has no %s %s", kind, name)
	return false
}

func TestKustomizeObjects(t *testing.T) {
	objs := build(t)
	for _, o := range objs {
		ns := o.GetNamespace()
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
			if ns != "" {
				t.Errorf("cluster-scoped %s %s has namespace %s", o.GetKind(), o.GetName(), ns)
			}
		default:
			if ns != systemNamespace {
				t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), ns, systemNamespace)
			}
		}
	}

	find(t, objs, "Namespace", systemNamespace, nil)
	find(t, objs, "CustomResourceDefinition", "workerpools.ate.dev", nil)
	find(t, objs, "CustomResourceDefinition", "sandboxconfigs.ate.dev", nil)
	// Each process its own identity, bound to its own generated roles: a
	// ClusterRole, and a Role in ate-system for its leader election.
	for _, process := range []string{"worker", "starter"} {
		name := "ate-orchestrator-" + process
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: systemNamespace}}
		find(t, objs, "ServiceAccount", name, nil)
		find(t, objs, "ClusterRole", name, nil)
		var crb rbacv1.ClusterRoleBinding
		if find(t, objs, "ClusterRoleBinding", name, &crb) {
			if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != name || !slices.Equal(crb.Subjects, want) {
				t.Errorf("ClusterRoleBinding %s binds %+v to %+v, want ClusterRole %s to %+v", name, crb.RoleRef, crb.Subjects, name, want)
			}
		}
		var role rbacv1.Role
		if find(t, objs, "Role", name, &role) {
			for _, r := range role.Rules {
				if slices.Contains(r.APIGroups, "coordination.k8s.io") && !slices.Equal(r.Resources, []string{"leases"}) {
					t.Errorf("Role %s grants %v in coordination.k8s.io, want leases only", name, r.Resources)
				}
			}
		}
		var rb rbacv1.RoleBinding
		if find(t, objs, "RoleBinding", name, &rb) {
			if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != name || !slices.Equal(rb.Subjects, want) {
				t.Errorf("RoleBinding %s binds %+v to %+v, want Role %s to %+v", name, rb.RoleRef, rb.Subjects, name, want)
			}
		}
	}
	// No ClusterRole grants Leases: they are granted in ate-system only.
	for _, o := range objs {
		var cr rbacv1.ClusterRole
		if o.GetKind() != "ClusterRole" || runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr) != nil {
			continue
		}
		for _, r := range cr.Rules {
			if slices.Contains(r.APIGroups, "coordination.k8s.io") {
				t.Errorf("ClusterRole %s grants %v in coordination.k8s.io in every namespace", cr.Name, r.Resources)
			}
		}
	}

	// The ConfigMap (its name has kustomize's hash) sets only variables the
	// binaries read.
	var config *corev1.ConfigMap
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "ate-orchestrator-config-") {
			config = &corev1.ConfigMap{}
			find(t, objs, "ConfigMap", o.GetName(), config)
		}
	}
	if config == nil {
		t.Fatal("kustomize build deploy/ has no ConfigMap ate-orchestrator-config-<hash>")
	}
	read := optionEnvNames(t)
	for k := range config.Data {
		if !slices.Contains(read, k) {
			t.Errorf("ConfigMap %s sets %s, which the binaries do not read (they read %v)", config.Name, k, read)
		}
	}
	if config.Data["TEMPORAL_ADDRESS"] == "" {
		t.Errorf("ConfigMap %s does not set TEMPORAL_ADDRESS", config.Name)
	}
	setting := func(k, def string) string {
		if v, ok := config.Data[k]; ok {
			return v
		}
		return def
	}
	healthPort := port(t, setting("HEALTH_PROBE_BIND_ADDRESS", options.DefaultHealthProbeBindAddress))
	metricsPort := port(t, setting("METRICS_BIND_ADDRESS", options.DefaultMetricsBindAddress))

	for _, name := range []string{"worker", "starter"} {
		var d appsv1.Deployment
		if !find(t, objs, "Deployment", "ate-orchestrator-"+name, &d) {
			continue
		}
		checkDeployment(t, &d, name, config.Name, healthPort, metricsPort)
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, command, configName string, healthPort, metricsPort int) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("Deployment %s: %s", d.Name, fmt.Sprintf(format, args...))
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if want := "ate-orchestrator-" + command; pod.ServiceAccountName != want {
		errorf("serviceAccountName %q, want %s", pod.ServiceAccountName, want)
	}
	if len(pod.Containers) != 1 {
		errorf("%d containers, want 1", len(pod.Containers))
		return
	}
	c := pod.Containers[0]
	if want := "/usr/local/bin/" + command; !slices.Equal(c.Command, []string{want}) || !slices.Contains(imageCommands(t, ""), want) {
		errorf("runs %v, want [%s], a command of the image", c.Command, want)
	}
	if !strings.HasPrefix(c.Image, "ate-orchestrator") {
		errorf("image %s, want the one kustomization.yaml's images: sets", c.Image)
	}

	// Configuration by environment.
	var fromConfig bool
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil && e.ConfigMapRef.Name == configName {
			fromConfig = true
		}
		if e.SecretRef != nil && (e.SecretRef.Optional == nil || !*e.SecretRef.Optional) {
			errorf("envFrom Secret %s is not optional", e.SecretRef.Name)
		}
	}
	if !fromConfig {
		errorf("envFrom %+v lacks ConfigMap %s", c.EnvFrom, configName)
	}
	read := envNames(t, command)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if !slices.Contains(read, e.Name) {
			errorf("sets %s, which the %s does not read (it reads %v)", e.Name, command, read)
		}
	}
	if env["LEADER_ELECT"] != "true" {
		errorf("LEADER_ELECT=%q: two %ss without leader election would both run their controllers", env["LEADER_ELECT"], command)
	}

	// Probes on the health port, metrics port declared.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["health"] != int32(healthPort) || ports["metrics"] != int32(metricsPort) {
		errorf("ports %v, want health %d and metrics %d (the bind addresses)", ports, healthPort, metricsPort)
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want ||
			(probe.HTTPGet.Port.String() != "health" && probe.HTTPGet.Port.IntValue() != healthPort) {
			errorf("no %s probe on the health port: %+v", want, probe)
		}
	}

	// Resources and a restricted security context.
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if rl.Cpu().IsZero() || rl.Memory().IsZero() {
			errorf("resources %+v: want cpu and memory requests and limits", c.Resources)
			break
		}
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
		errorf("runAsNonRoot is not set")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		errorf("readOnlyRootFilesystem is not set")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		errorf("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		errorf("capabilities %+v, want drop ALL", sc.Capabilities)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		errorf("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
}

// Every object of the kustomization is valid for a real API server: a
// server-side apply in dry-run mode runs the whole admission chain (schema,
// defaulting, validation) without persisting.
//
// The namespace is created for real first, as the server checks namespaced
// objects against an existing namespace even in a dry run. The CRDs are in
// the dry run too: testenv installed them already, and ForceOwnership lets
// this apply take their fields over.
func TestKustomizeAppliesToAPIServer(t *testing.T) {
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := build(t)

	owner := client.FieldOwner("ate-deploy-test")
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership); err != nil {
				t.Fatalf("creating Namespace %s: %v", o.GetName(), err)
			}
		}
	}
	kinds := map[string]int{}
	for _, o := range objs {
		err := env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("server-side apply (dry run) of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	t.Logf("applied (dry run) %d objects: %v", len(objs), kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition", "Deployment", "Namespace", "PodDisruptionBudget", "Role", "RoleBinding", "ServiceAccount"}; !slices.Equal(slices.Sorted(maps.Keys(kinds)), want) {
		t.Errorf("applied kinds %v, want %v", slices.Sorted(maps.Keys(kinds)), want)
	}
}

// The worker pod's grace period covers the worker's graceful stop with a
// margin for the process's exit, and not much more: a longer one would
// promise activities time the worker does not give them, and keep a hung
// pod for longer in a rollout.
func TestWorkerGracePeriodCoversItsStop(t *testing.T) {
	const minMargin, maxMargin = 5 * time.Second, 15 * time.Second
	var d appsv1.Deployment
	if !find(t, build(t), "Deployment", "ate-orchestrator-worker", &d) {
		return
	}
	g := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil {
		t.Fatal("the worker's pod has no terminationGracePeriodSeconds: Kubernetes' 30 s default would be implicit")
	}
	grace := time.Duration(*g) * time.Second
	if margin := grace - worker.ShutdownBudget; margin < minMargin || margin > maxMargin {
		t.Errorf("the worker's terminationGracePeriodSeconds is %v and its graceful stop takes up to %v (worker.ShutdownBudget): want a margin between %v and %v, have %v",
			grace, worker.ShutdownBudget, minMargin, maxMargin, margin)
	}
}

// Each Deployment has a PodDisruptionBudget whose selector picks exactly
// its pods: a drain evicts one worker and one starter at a time, never both
// replicas of either. A selector that matched no pod would protect nothing;
// one that matched the other Deployment's pods too would count them
// together.
func TestPodDisruptionBudgets(t *testing.T) {
	objs := build(t)
	deployments := map[string]labels.Set{}
	for _, name := range []string{"worker", "starter"} {
		var d appsv1.Deployment
		require.True(t, find(t, objs, "Deployment", "ate-orchestrator-"+name, &d))
		deployments[name] = d.Spec.Template.Labels
	}
	for name := range deployments {
		t.Run(name, func(t *testing.T) {
			var pdb policyv1.PodDisruptionBudget
			require.True(t, find(t, objs, "PodDisruptionBudget", "ate-orchestrator-"+name, &pdb))
			require.Equal(t, systemNamespace, pdb.Namespace)
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			require.NoError(t, err)
			require.False(t, sel.Empty(), "an empty selector selects every pod of the namespace")
			for other, otherLabels := range deployments {
				require.Equal(t, other == name, sel.Matches(otherLabels),
					"PodDisruptionBudget %s selects %s of the %s pods (labels %v)", pdb.Name, sel, other, otherLabels)
			}
			// One pod at a time, however many replicas.
			require.Nil(t, pdb.Spec.MinAvailable, "minAvailable blocks every drain of a Deployment scaled to 1")
			require.Equal(t, intstr.FromInt32(1), ptr.Deref(pdb.Spec.MaxUnavailable, intstr.IntOrString{}))
			require.Equal(t, policyv1.AlwaysAllow, ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, ""))
		})
	}
}
