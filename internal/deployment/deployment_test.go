package deployment

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the current output")

const (
	poolName  = "counter"
	poolNS    = "demo"
	poolUID   = "6f1f3c2e-9a4b-4b7e-8d3f-0c2a1b9e7d55"
	poolImage = "registry.example/ateworker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func newPool(class v1alpha1.SandboxClass, tmpl *v1alpha1.WorkerPoolPodTemplate) *v1alpha1.WorkerPool {
	return &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{
			Name:      poolName,
			Namespace: poolNS,
			UID:       poolUID,
			// The pool's own labels label Worker records, not the Deployment.
			Labels: map[string]string{"workload": "counter"},
		},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:    ptr.To[int32](3),
			WorkerImage: poolImage,
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{
				Name:      class,
				ConfigRef: &v1alpha1.SandboxConfigReference{Name: "some-config"},
			}},
			Template: tmpl,
		},
	}
}

// fullTemplate sets every field of the template.
func fullTemplate() *v1alpha1.WorkerPoolPodTemplate {
	return &v1alpha1.WorkerPoolPodTemplate{
		Labels:      map[string]v1alpha1.LabelValue{"team": "infra", "tier": "gpu"},
		Annotations: map[string]string{"example.com/owner": "infra", "a.example.com/note": "x"},
		NodeSelector: map[string]v1alpha1.LabelValue{
			"example.com/pool": "workers",
			"disk":             "ssd",
		},
		Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ate", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		},
		PriorityClassName: "ate-workers",
		NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"},
					}},
				}},
			},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 10,
				Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "example.com/fast", Operator: corev1.NodeSelectorOpExists,
					}},
				},
			}},
		},
		Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("1Gi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
			},
		},
		ServiceAccountName: "custom-worker",
	}
}

func mustBuild(t *testing.T, pool *v1alpha1.WorkerPool) *appsv1ac.DeploymentApplyConfiguration {
	t.Helper()
	ac, err := Build(pool)
	require.NoError(t, err)
	require.NotNil(t, ac)
	return ac
}

func worker(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) corev1ac.ContainerApplyConfiguration {
	t.Helper()
	require.Len(t, ac.Spec.Template.Spec.Containers, 1)
	return ac.Spec.Template.Spec.Containers[0]
}

// quantities renders a resource list as strings, since Quantity values with
// the same amount need not be reflect.DeepEqual.
func quantities(rl *corev1.ResourceList) map[string]string {
	if rl == nil {
		return nil
	}
	out := map[string]string{}
	for name, q := range *rl {
		out[string(name)] = q.String()
	}
	return out
}

func volumeNames(ac *appsv1ac.DeploymentApplyConfiguration) []string {
	var names []string
	for _, v := range ac.Spec.Template.Spec.Volumes {
		names = append(names, *v.Name)
	}
	return names
}

func mountPaths(c corev1ac.ContainerApplyConfiguration) map[string]string {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		out[*m.Name] = *m.MountPath
	}
	return out
}

func wantClassToleration(class string) corev1ac.TolerationApplyConfiguration {
	return *corev1ac.Toleration().
		WithKey("ate.dev/sandboxClass").
		WithOperator(corev1.TolerationOpEqual).
		WithValue(class).
		WithEffect(corev1.TaintEffectNoSchedule)
}

var gvisorCaps = []corev1.Capability{
	"NET_ADMIN", "SYS_ADMIN", "SYS_CHROOT", "SYS_PTRACE", "SETUID", "SETGID", "SETPCAP",
	"DAC_OVERRIDE", "FOWNER", "CHOWN", "MKNOD", "NET_RAW", "SETFCAP",
}

// TestBuild checks every field of the Deployment for both classes, with and
// without a template, on the apply configuration, and compares its JSON with
// testdata/<case>.json so that no field is declared that the case does not
// expect (run with -update to rewrite those files, then review the diff).
func TestBuild(t *testing.T) {
	tests := []struct {
		name  string
		pool  *v1alpha1.WorkerPool
		check func(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration)
	}{
		{
			name: "gvisor",
			pool: newPool(v1alpha1.SandboxClassGVisor, nil),
			check: func(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) {
				c := worker(t, ac)
				require.Equal(t, gvisorCaps, c.SecurityContext.Capabilities.Add)
				require.Nil(t, c.Resources, "no resources are declared without a template")
				require.Equal(t, []string{"var-lib-ate", "atunnel-identity", "atunnel-egress-trust"}, volumeNames(ac))
				require.Len(t, c.VolumeMounts, 3)
				require.Equal(t, map[string]string{v1alpha1.WorkerPoolLabel: poolName}, ac.Labels)
				require.Equal(t, map[string]string{v1alpha1.WorkerPoolLabel: poolName}, ac.Spec.Template.Labels)
				require.Nil(t, ac.Annotations)
				require.Nil(t, ac.Spec.Template.Annotations)
				spec := ac.Spec.Template.Spec
				require.Equal(t, "ateworker", *spec.ServiceAccountName)
				require.Nil(t, spec.NodeSelector)
				require.Nil(t, spec.PriorityClassName)
				require.Nil(t, spec.Affinity)
				require.Equal(t, []corev1ac.TolerationApplyConfiguration{wantClassToleration("gvisor")}, spec.Tolerations)
			},
		},
		{
			name: "microvm",
			pool: newPool(v1alpha1.SandboxClassMicroVM, nil),
			check: func(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) {
				c := worker(t, ac)
				require.Equal(t, append(append([]corev1.Capability{}, gvisorCaps...), "FSETID", "DAC_READ_SEARCH", "SYS_RESOURCE"),
					c.SecurityContext.Capabilities.Add)
				require.Equal(t, map[string]string{"ate.dev/kvm": "1"}, quantities(c.Resources.Limits))
				require.Nil(t, c.Resources.Requests)
				require.Equal(t, []string{"var-lib-ate", "atunnel-identity", "atunnel-egress-trust", "dev-net-tun"}, volumeNames(ac))
				tun := ac.Spec.Template.Spec.Volumes[3]
				require.Equal(t, "/dev/net/tun", *tun.HostPath.Path)
				require.Equal(t, corev1.HostPathCharDev, *tun.HostPath.Type)
				require.Equal(t, "/dev/net/tun", mountPaths(c)["dev-net-tun"])
				for _, v := range ac.Spec.Template.Spec.Volumes {
					if v.HostPath != nil {
						require.NotEqual(t, "/dev/kvm", *v.HostPath.Path, "/dev/kvm comes from the device plugin")
					}
				}
				spec := ac.Spec.Template.Spec
				require.Equal(t, "ateworker", *spec.ServiceAccountName)
				require.Nil(t, spec.NodeSelector)
				require.Nil(t, spec.PriorityClassName)
				require.Nil(t, spec.Affinity)
				require.Equal(t, []corev1ac.TolerationApplyConfiguration{wantClassToleration("microvm")}, spec.Tolerations)
			},
		},
		{
			name: "gvisor-template",
			pool: newPool(v1alpha1.SandboxClassGVisor, fullTemplate()),
			check: func(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) {
				checkFullTemplate(t, ac, "gvisor")
				c := worker(t, ac)
				require.Equal(t, gvisorCaps, c.SecurityContext.Capabilities.Add)
				require.Equal(t, map[string]string{"cpu": "2", "memory": "4Gi"}, quantities(c.Resources.Limits))
				require.Equal(t, map[string]string{"cpu": "500m", "memory": "1Gi"}, quantities(c.Resources.Requests))
				require.Equal(t, []string{"var-lib-ate", "atunnel-identity", "atunnel-egress-trust"}, volumeNames(ac))
			},
		},
		{
			name: "microvm-template",
			pool: newPool(v1alpha1.SandboxClassMicroVM, fullTemplate()),
			check: func(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) {
				checkFullTemplate(t, ac, "microvm")
				c := worker(t, ac)
				require.Contains(t, c.SecurityContext.Capabilities.Add, corev1.Capability("DAC_READ_SEARCH"))
				require.Equal(t, map[string]string{"cpu": "2", "memory": "4Gi", "ate.dev/kvm": "1"}, quantities(c.Resources.Limits))
				require.Equal(t, map[string]string{"cpu": "500m", "memory": "1Gi"}, quantities(c.Resources.Requests))
				require.Equal(t, []string{"var-lib-ate", "atunnel-identity", "atunnel-egress-trust", "dev-net-tun"}, volumeNames(ac))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pool.DeepCopy()
			ac := mustBuild(t, tt.pool)
			require.Equal(t, before, tt.pool, "Build must not modify the pool")
			checkCommon(t, ac)
			tt.check(t, ac)
			compareGolden(t, ac, tt.name)
		})
	}
}

// checkCommon checks what every worker Deployment has whatever the class and
// template.
func checkCommon(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration) {
	t.Helper()
	require.Equal(t, "apps/v1", *ac.APIVersion)
	require.Equal(t, "Deployment", *ac.Kind)
	require.Equal(t, poolName, *ac.Name)
	require.Equal(t, poolNS, *ac.Namespace)
	require.Equal(t, []metav1ac.OwnerReferenceApplyConfiguration{{
		APIVersion:         ptr.To("ate.dev/v1alpha1"),
		Kind:               ptr.To("WorkerPool"),
		Name:               ptr.To(poolName),
		UID:                ptr.To[types.UID](poolUID),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}, ac.OwnerReferences)
	require.Equal(t, v1alpha1.WorkerPoolLabel, "ate.dev/worker-pool")
	require.Equal(t, poolName, ac.Labels["ate.dev/worker-pool"])

	spec := ac.Spec
	require.Equal(t, int32(3), *spec.Replicas)
	require.Equal(t, map[string]string{"ate.dev/worker-pool": poolName}, spec.Selector.MatchLabels)
	require.Nil(t, spec.Selector.MatchExpressions)
	require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, *spec.Strategy.Type)
	require.Equal(t, intstr.FromInt32(0), *spec.Strategy.RollingUpdate.MaxSurge)
	require.Equal(t, intstr.FromString("10%"), *spec.Strategy.RollingUpdate.MaxUnavailable)
	require.Equal(t, int32(3900), *spec.ProgressDeadlineSeconds)
	require.Greater(t, int64(*spec.ProgressDeadlineSeconds), *spec.Template.Spec.TerminationGracePeriodSeconds)
	require.Equal(t, poolName, spec.Template.Labels["ate.dev/worker-pool"])

	pod := spec.Template.Spec
	require.Equal(t, int64(3600), *pod.TerminationGracePeriodSeconds)
	require.Equal(t, int64(0), *pod.SecurityContext.RunAsUser)
	require.Equal(t, int64(0), *pod.SecurityContext.RunAsGroup)
	require.NotEmpty(t, pod.Tolerations)
	last := pod.Tolerations[len(pod.Tolerations)-1]
	require.Equal(t, "ate.dev/sandboxClass", *last.Key)

	// Volumes shared by both classes.
	vols := map[string]corev1ac.VolumeApplyConfiguration{}
	for _, v := range pod.Volumes {
		vols[*v.Name] = v
	}
	require.Len(t, vols, len(pod.Volumes), "volume names are unique")
	state := vols["var-lib-ate"]
	require.Equal(t, "/var/lib/ate", *state.HostPath.Path)
	require.Equal(t, corev1.HostPathDirectoryOrCreate, *state.HostPath.Type)
	live := metav1ac.LabelSelector().WithMatchLabels(map[string]string{"podcert.ate.dev/canarying": "live"})
	require.Equal(t, &corev1ac.ProjectedVolumeSourceApplyConfiguration{
		Sources: []corev1ac.VolumeProjectionApplyConfiguration{
			*corev1ac.VolumeProjection().WithPodCertificate(corev1ac.PodCertificateProjection().
				WithSignerName("podidentity.podcert.ate.dev/identity").
				WithKeyType("ECDSAP256").
				WithCredentialBundlePath("credential-bundle.pem")),
			*corev1ac.VolumeProjection().WithClusterTrustBundle(corev1ac.ClusterTrustBundleProjection().
				WithSignerName("podidentity.podcert.ate.dev/identity").
				WithLabelSelector(live).
				WithPath("trust-bundle.pem")),
		},
	}, vols["atunnel-identity"].Projected)
	require.Equal(t, &corev1ac.ProjectedVolumeSourceApplyConfiguration{
		Sources: []corev1ac.VolumeProjectionApplyConfiguration{
			*corev1ac.VolumeProjection().WithClusterTrustBundle(corev1ac.ClusterTrustBundleProjection().
				WithSignerName("servicedns.podcert.ate.dev/identity").
				WithLabelSelector(live).
				WithPath("trust-bundle.pem")),
		},
	}, vols["atunnel-egress-trust"].Projected)

	c := worker(t, ac)
	require.Equal(t, "worker", *c.Name)
	require.Equal(t, poolImage, *c.Image)
	require.Equal(t, []corev1ac.ContainerPortApplyConfiguration{
		*corev1ac.ContainerPort().WithName("https").WithContainerPort(443).WithProtocol(corev1.ProtocolTCP),
		*corev1ac.ContainerPort().WithName("connect").WithContainerPort(8443).WithProtocol(corev1.ProtocolTCP),
		*corev1ac.ContainerPort().WithName("health").WithContainerPort(8080).WithProtocol(corev1.ProtocolTCP),
	}, c.Ports)
	require.Equal(t, corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
		WithPath("/readyz").
		WithPort(intstr.FromString("health"))), c.ReadinessProbe)
	require.Nil(t, c.LivenessProbe)

	require.Len(t, c.Env, 3)
	require.Equal(t, "POD_UID", *c.Env[0].Name)
	require.Equal(t, "metadata.uid", *c.Env[0].ValueFrom.FieldRef.FieldPath)
	for i, want := range []struct{ name, resource, divisor string }{
		{"CPU_LIMIT_MILLICORES", "limits.cpu", "1m"},
		{"MEMORY_LIMIT_BYTES", "limits.memory", "1"},
	} {
		env := c.Env[i+1]
		require.Equal(t, want.name, *env.Name)
		require.Nil(t, env.Value)
		require.Nil(t, env.ValueFrom.FieldRef)
		ref := env.ValueFrom.ResourceFieldRef
		require.Equal(t, "worker", *ref.ContainerName)
		require.Equal(t, want.resource, *ref.Resource)
		require.Equal(t, want.divisor, ref.Divisor.String())
	}

	mounts := map[string]corev1ac.VolumeMountApplyConfiguration{}
	for _, m := range c.VolumeMounts {
		mounts[*m.Name] = m
		_, ok := vols[*m.Name]
		require.True(t, ok, "mount %s names a volume", *m.Name)
	}
	require.Equal(t, "/var/lib/ate", *mounts["var-lib-ate"].MountPath)
	require.Nil(t, mounts["var-lib-ate"].ReadOnly)
	require.Equal(t, corev1.MountPropagationHostToContainer, *mounts["var-lib-ate"].MountPropagation)
	require.Equal(t, "/run/podidentity.podcert.ate.dev", *mounts["atunnel-identity"].MountPath)
	require.True(t, *mounts["atunnel-identity"].ReadOnly)
	require.Equal(t, "/run/servicedns.podcert.ate.dev", *mounts["atunnel-egress-trust"].MountPath)
	require.True(t, *mounts["atunnel-egress-trust"].ReadOnly)

	sc := c.SecurityContext
	require.False(t, *sc.Privileged)
	require.Equal(t, int64(0), *sc.RunAsUser)
	require.Equal(t, int64(0), *sc.RunAsGroup)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Equal(t, corev1.SeccompProfileTypeUnconfined, *sc.SeccompProfile.Type)
	require.Equal(t, corev1.AppArmorProfileTypeUnconfined, *sc.AppArmorProfile.Type)
	require.Nil(t, sc.AllowPrivilegeEscalation, "CAP_SYS_ADMIN requires privilege escalation; leave the default")
}

func checkFullTemplate(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration, class string) {
	t.Helper()
	wantLabels := map[string]string{"team": "infra", "tier": "gpu", "ate.dev/worker-pool": poolName}
	wantAnnotations := map[string]string{"example.com/owner": "infra", "a.example.com/note": "x"}
	require.Equal(t, wantLabels, ac.Labels)
	require.Equal(t, wantLabels, ac.Spec.Template.Labels)
	require.Equal(t, wantAnnotations, ac.Annotations)
	require.Equal(t, wantAnnotations, ac.Spec.Template.Annotations)
	require.Equal(t, map[string]string{"ate.dev/worker-pool": poolName}, ac.Spec.Selector.MatchLabels,
		"template labels never reach the selector")

	spec := ac.Spec.Template.Spec
	require.Equal(t, map[string]string{"example.com/pool": "workers", "disk": "ssd"}, spec.NodeSelector)
	require.Equal(t, "ate-workers", *spec.PriorityClassName)
	require.Equal(t, "custom-worker", *spec.ServiceAccountName)
	require.Equal(t, []corev1ac.TolerationApplyConfiguration{
		*corev1ac.Toleration().WithKey("dedicated").WithOperator(corev1.TolerationOpEqual).WithValue("ate").WithEffect(corev1.TaintEffectNoSchedule),
		*corev1ac.Toleration().WithKey("node.kubernetes.io/unreachable").WithOperator(corev1.TolerationOpExists).WithEffect(corev1.TaintEffectNoExecute).WithTolerationSeconds(300),
		wantClassToleration(class),
	}, spec.Tolerations)
	require.Equal(t, corev1ac.Affinity().WithNodeAffinity(corev1ac.NodeAffinity().
		WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.NodeSelector().
			WithNodeSelectorTerms(corev1ac.NodeSelectorTerm().
				WithMatchExpressions(corev1ac.NodeSelectorRequirement().
					WithKey("topology.kubernetes.io/zone").
					WithOperator(corev1.NodeSelectorOpIn).
					WithValues("zone-a", "zone-b")))).
		WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.PreferredSchedulingTerm().
			WithWeight(10).
			WithPreference(corev1ac.NodeSelectorTerm().
				WithMatchExpressions(corev1ac.NodeSelectorRequirement().
					WithKey("example.com/fast").
					WithOperator(corev1.NodeSelectorOpExists))))), spec.Affinity)
	require.Nil(t, spec.Affinity.PodAffinity)
	require.Nil(t, spec.Affinity.PodAntiAffinity)
}

func compareGolden(t *testing.T, ac *appsv1ac.DeploymentApplyConfiguration, name string) {
	t.Helper()
	got, err := json.MarshalIndent(ac, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", name+".json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

func TestClassTolerationAddedOnce(t *testing.T) {
	own := corev1.Toleration{Key: "ate.dev/sandboxClass", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}
	implicitEqual := own
	implicitEqual.Operator = ""
	other := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	exists := corev1.Toleration{Key: "ate.dev/sandboxClass", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Toleration{Key: "ate.dev/sandboxClass", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoExecute}
	otherClass := corev1.Toleration{Key: "ate.dev/sandboxClass", Operator: corev1.TolerationOpEqual, Value: "microvm", Effect: corev1.TaintEffectNoSchedule}

	ac := func(t corev1.Toleration) corev1ac.TolerationApplyConfiguration { return *toleration(t) }
	tests := []struct {
		name     string
		template *v1alpha1.WorkerPoolPodTemplate
		want     []corev1ac.TolerationApplyConfiguration
	}{
		{"no template", nil, []corev1ac.TolerationApplyConfiguration{ac(own)}},
		{"no tolerations", &v1alpha1.WorkerPoolPodTemplate{}, []corev1ac.TolerationApplyConfiguration{ac(own)}},
		{"identical", &v1alpha1.WorkerPoolPodTemplate{Tolerations: []corev1.Toleration{own}},
			[]corev1ac.TolerationApplyConfiguration{ac(own)}},
		{"identical before another", &v1alpha1.WorkerPoolPodTemplate{Tolerations: []corev1.Toleration{own, other}},
			[]corev1ac.TolerationApplyConfiguration{ac(other), ac(own)}},
		{"identical twice", &v1alpha1.WorkerPoolPodTemplate{Tolerations: []corev1.Toleration{own, other, own}},
			[]corev1ac.TolerationApplyConfiguration{ac(other), ac(own)}},
		{"empty operator means Equal", &v1alpha1.WorkerPoolPodTemplate{Tolerations: []corev1.Toleration{implicitEqual}},
			[]corev1ac.TolerationApplyConfiguration{ac(own)}},
		{"not identical: Exists, NoExecute, other class", &v1alpha1.WorkerPoolPodTemplate{Tolerations: []corev1.Toleration{exists, noExecute, otherClass}},
			[]corev1ac.TolerationApplyConfiguration{ac(exists), ac(noExecute), ac(otherClass), ac(own)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustBuild(t, newPool(v1alpha1.SandboxClassGVisor, tt.template)).Spec.Template.Spec.Tolerations
			require.Equal(t, tt.want, got)
			n := 0
			for _, g := range got {
				if reflect.DeepEqual(g, ac(own)) {
					n++
				}
			}
			require.Equal(t, 1, n, "the class toleration appears exactly once")
			require.Equal(t, ac(own), got[len(got)-1], "the class toleration comes last")
		})
	}
}

func TestKVMLimitMerge(t *testing.T) {
	tests := []struct {
		name         string
		class        v1alpha1.SandboxClass
		resources    *corev1.ResourceRequirements
		wantLimits   map[string]string
		wantRequests map[string]string
	}{
		{
			name: "microvm without resources", class: v1alpha1.SandboxClassMicroVM,
			wantLimits: map[string]string{"ate.dev/kvm": "1"},
		},
		{
			name: "microvm merges with the template's limits", class: v1alpha1.SandboxClassMicroVM,
			resources: &corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("2Gi")},
				Requests: corev1.ResourceList{"cpu": resource.MustParse("250m")},
			},
			wantLimits:   map[string]string{"cpu": "1", "memory": "2Gi", "ate.dev/kvm": "1"},
			wantRequests: map[string]string{"cpu": "250m"},
		},
		{
			name: "microvm: the controller's kvm limit wins over a larger one", class: v1alpha1.SandboxClassMicroVM,
			resources:  &corev1.ResourceRequirements{Limits: corev1.ResourceList{"ate.dev/kvm": resource.MustParse("4"), "cpu": resource.MustParse("1")}},
			wantLimits: map[string]string{"cpu": "1", "ate.dev/kvm": "1"},
		},
		{
			name: "microvm: the controller's kvm limit wins over zero", class: v1alpha1.SandboxClassMicroVM,
			resources:  &corev1.ResourceRequirements{Limits: corev1.ResourceList{"ate.dev/kvm": resource.MustParse("0")}},
			wantLimits: map[string]string{"ate.dev/kvm": "1"},
		},
		{
			name: "microvm: a kvm request is kept equal to the limit", class: v1alpha1.SandboxClassMicroVM,
			resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"ate.dev/kvm": resource.MustParse("2"), "memory": resource.MustParse("1Gi")},
			},
			wantLimits:   map[string]string{"ate.dev/kvm": "1"},
			wantRequests: map[string]string{"ate.dev/kvm": "1", "memory": "1Gi"},
		},
		{
			name: "gvisor passes the template through", class: v1alpha1.SandboxClassGVisor,
			resources:  &corev1.ResourceRequirements{Limits: corev1.ResourceList{"ate.dev/kvm": resource.MustParse("2")}},
			wantLimits: map[string]string{"ate.dev/kvm": "2"},
		},
		{
			name: "gvisor with empty resources declares none", class: v1alpha1.SandboxClassGVisor,
			resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := newPool(tt.class, &v1alpha1.WorkerPoolPodTemplate{Resources: tt.resources})
			before := pool.DeepCopy()
			c := worker(t, mustBuild(t, pool))
			require.Equal(t, before, pool, "Build must not modify the template's resource lists")
			if tt.wantLimits == nil && tt.wantRequests == nil {
				require.Nil(t, c.Resources)
				return
			}
			require.Equal(t, tt.wantLimits, quantities(c.Resources.Limits))
			require.Equal(t, tt.wantRequests, quantities(c.Resources.Requests))
			raw, err := json.Marshal(c.Resources)
			require.NoError(t, err)
			require.NotContains(t, string(raw), "claims")
		})
	}
}

func TestLabelPrecedence(t *testing.T) {
	tmpl := &v1alpha1.WorkerPoolPodTemplate{
		// The CRD rejects ate.dev keys; Build must not rely on it.
		Labels:      map[string]v1alpha1.LabelValue{"ate.dev/worker-pool": "impostor", "team": "infra"},
		Annotations: map[string]string{"example.com/a": "b"},
	}
	pool := newPool(v1alpha1.SandboxClassGVisor, tmpl)
	ac := mustBuild(t, pool)
	want := map[string]string{"ate.dev/worker-pool": poolName, "team": "infra"}
	require.Equal(t, want, ac.Labels)
	require.Equal(t, want, ac.Spec.Template.Labels)
	require.Equal(t, map[string]string{"ate.dev/worker-pool": poolName}, ac.Spec.Selector.MatchLabels)
	require.Equal(t, v1alpha1.LabelValue("impostor"), tmpl.Labels["ate.dev/worker-pool"], "the template is not modified")

	// The pool's own metadata.labels label Worker records, not the Deployment.
	require.NotContains(t, ac.Labels, "workload")
	require.NotContains(t, ac.Spec.Template.Labels, "workload")

	// The configuration does not alias the template's maps.
	ac.Labels["team"] = "changed"
	ac.Annotations["example.com/a"] = "changed"
	require.Equal(t, v1alpha1.LabelValue("infra"), tmpl.Labels["team"])
	require.Equal(t, "b", tmpl.Annotations["example.com/a"])
	require.Equal(t, "infra", ac.Spec.Template.Labels["team"], "Deployment and pod labels are separate maps")
}

func TestServiceAccountName(t *testing.T) {
	tests := []struct {
		name string
		tmpl *v1alpha1.WorkerPoolPodTemplate
		want string
	}{
		{"no template", nil, "ateworker"},
		{"template without one", &v1alpha1.WorkerPoolPodTemplate{PriorityClassName: "p"}, "ateworker"},
		{"template with one", &v1alpha1.WorkerPoolPodTemplate{ServiceAccountName: "custom"}, "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ac := mustBuild(t, newPool(v1alpha1.SandboxClassMicroVM, tt.tmpl))
			require.Equal(t, tt.want, *ac.Spec.Template.Spec.ServiceAccountName)
		})
	}
	require.Equal(t, "ateworker", v1alpha1.DefaultWorkerServiceAccount)
}

// TestEmptyTemplateDeclaresNothing: a template whose fields are empty (empty
// maps, an affinity without terms, empty resource lists) builds exactly what
// no template builds, so no empty value is ever declared under SSA.
func TestEmptyTemplateDeclaresNothing(t *testing.T) {
	for _, class := range []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM} {
		t.Run(string(class), func(t *testing.T) {
			empty := &v1alpha1.WorkerPoolPodTemplate{
				Labels:       map[string]v1alpha1.LabelValue{},
				Annotations:  map[string]string{},
				NodeSelector: map[string]v1alpha1.LabelValue{},
				Tolerations:  []corev1.Toleration{},
				NodeAffinity: &corev1.NodeAffinity{},
				Resources:    &corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
			}
			want := mustBuild(t, newPool(class, nil))
			got := mustBuild(t, newPool(class, empty))
			require.Equal(t, want, got)
			raw, err := json.Marshal(got)
			require.NoError(t, err)
			for _, junk := range []string{`"affinity"`, `"priorityClassName"`, `"nodeSelector"`, `"annotations"`, `:{}`, `:""`, `:[]`} {
				require.NotContains(t, string(raw), junk)
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	tmpl := fullTemplate()
	for i := range 20 {
		k := string(rune('a' + i))
		tmpl.Labels["l"+k] = v1alpha1.LabelValue(k)
		tmpl.Annotations["example.com/"+k] = k
		tmpl.NodeSelector["n"+k] = v1alpha1.LabelValue(k)
	}
	first, err := json.Marshal(mustBuild(t, newPool(v1alpha1.SandboxClassMicroVM, tmpl)))
	require.NoError(t, err)
	for range 10 {
		again, err := json.Marshal(mustBuild(t, newPool(v1alpha1.SandboxClassMicroVM, tmpl.DeepCopy())))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1alpha1.WorkerPool)
		want   string
	}{
		{"no name", func(p *v1alpha1.WorkerPool) { p.Name = "" }, "no name or namespace"},
		{"no namespace", func(p *v1alpha1.WorkerPool) { p.Namespace = "" }, "no name or namespace"},
		{"no uid", func(p *v1alpha1.WorkerPool) { p.UID = "" }, "no UID"},
		{"no replicas", func(p *v1alpha1.WorkerPool) { p.Spec.Replicas = nil }, "spec.replicas is not set"},
		{"negative replicas", func(p *v1alpha1.WorkerPool) { p.Spec.Replicas = ptr.To[int32](-1) }, "negative"},
		{"no image", func(p *v1alpha1.WorkerPool) { p.Spec.WorkerImage = "" }, "workerImage"},
		{"no class", func(p *v1alpha1.WorkerPool) { p.Spec.SandboxClasses = nil }, "exactly one entry, has 0"},
		{"two classes", func(p *v1alpha1.WorkerPool) {
			p.Spec.SandboxClasses = append(p.Spec.SandboxClasses, v1alpha1.WorkerPoolSandboxClass{Name: v1alpha1.SandboxClassMicroVM})
		}, "exactly one entry, has 2"},
		{"unknown class", func(p *v1alpha1.WorkerPool) { p.Spec.SandboxClasses[0].Name = "kata" }, `unknown sandbox class "kata"`},
		{"resource claims", func(p *v1alpha1.WorkerPool) {
			p.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{Resources: &corev1.ResourceRequirements{
				Claims: []corev1.ResourceClaim{{Name: "gpu"}},
			}}
		}, "claims is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := newPool(v1alpha1.SandboxClassGVisor, nil)
			tt.mutate(pool)
			ac, err := Build(pool)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, ac)
		})
	}
	ac, err := Build(nil)
	require.Error(t, err)
	require.Nil(t, ac)
}

func TestZeroReplicasAreDeclared(t *testing.T) {
	pool := newPool(v1alpha1.SandboxClassGVisor, nil)
	pool.Spec.Replicas = ptr.To[int32](0)
	ac := mustBuild(t, pool)
	require.Equal(t, int32(0), *ac.Spec.Replicas)
	raw, err := json.Marshal(ac.Spec)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"replicas":0`)
}
