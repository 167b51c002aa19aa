package install

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestWorkerPodPrerequisites checks, on the local cluster's API server,
// the prerequisites of docs/install.md that an API server decides for a
// pool's worker pod (internal/deployment.Build, for each class):
//
//   - Pod Security: the pod is refused in a namespace that enforces
//     `baseline` or `restricted`, and admitted in one that enforces
//     `privileged` (a server-side dry run of the pod, as the ReplicaSet
//     controller would create it);
//   - the API server keeps its podCertificate and clusterTrustBundle
//     projections (an API server whose feature gates are off drops them
//     from the pod it stores) and its Unconfined seccomp and AppArmor
//     profiles, root user and added capabilities;
//   - it tolerates its class's taint, and a micro-VM worker asks for one
//     ate.dev/kvm.
func TestWorkerPodPrerequisites(t *testing.T) {
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	ctx := context.Background()

	// The check docs/install.md gives: `kubectl api-resources
	// --api-group=certificates.k8s.io` lists both kinds of the projections.
	groups, err := cs.Discovery().ServerGroups()
	require.NoError(t, err)
	served := map[string]bool{}
	for _, g := range groups.Groups {
		if g.Name != "certificates.k8s.io" {
			continue
		}
		for _, v := range g.Versions {
			list, err := cs.Discovery().ServerResourcesForGroupVersion(v.GroupVersion)
			require.NoError(t, err)
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
		}
	}
	for _, r := range []string{"clustertrustbundles", "podcertificaterequests"} {
		require.True(t, served[r], "the API server serves certificates.k8s.io %s (it serves %v)", r, served)
	}

	for _, class := range []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM} {
		t.Run(string(class), func(t *testing.T) {
			wp := producttest.Pool("placeholder", "pool", "")
			wp.Spec.SandboxClasses = []v1alpha1.WorkerPoolSandboxClass{{Name: class}}
			wp.UID = "00000000-0000-0000-0000-000000000001" // the owner reference's
			ac, err := deployment.Build(wp)
			require.NoError(t, err)
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac.Spec.Template)
			require.NoError(t, err)
			var tmpl corev1.PodTemplateSpec
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, &tmpl))

			for _, level := range []string{"restricted", "baseline", "privileged"} {
				ns := env.Namespace(t)
				n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				require.NoError(t, err)
				n.Labels["pod-security.kubernetes.io/enforce"] = level
				_, err = cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
				require.NoError(t, err)

				pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
				pod.Name, pod.Namespace = "worker", ns
				got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if level != "privileged" {
					require.True(t, apierrors.IsForbidden(err), "a %s worker pod in a namespace enforcing %s: %v", class, level, err)
					require.Contains(t, err.Error(), "violates PodSecurity")
					continue
				}
				require.NoError(t, err, "a %s worker pod in a namespace enforcing privileged", class)
				requireWorkerPodKept(t, class, got)
			}
		})
	}
}

// requireWorkerPodKept checks the pod the API server returned still has
// what the worker needs.
func requireWorkerPodKept(t *testing.T, class v1alpha1.SandboxClass, pod *corev1.Pod) {
	t.Helper()
	var podCert, trustBundles []string
	hostPath := false
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPath = true
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.PodCertificate != nil {
				podCert = append(podCert, s.PodCertificate.SignerName)
			}
			if s.ClusterTrustBundle != nil {
				require.NotNil(t, s.ClusterTrustBundle.LabelSelector)
				require.Equal(t, map[string]string{"podcert.ate.dev/canarying": "live"}, s.ClusterTrustBundle.LabelSelector.MatchLabels)
				trustBundles = append(trustBundles, *s.ClusterTrustBundle.SignerName)
			}
		}
	}
	require.Equal(t, []string{"podidentity.podcert.ate.dev/identity"}, podCert, "the podCertificate projections the API server kept")
	require.ElementsMatch(t, []string{"podidentity.podcert.ate.dev/identity", "servicedns.podcert.ate.dev/identity"}, trustBundles,
		"the clusterTrustBundle projections the API server kept")
	require.True(t, hostPath, "a hostPath volume")

	require.Len(t, pod.Spec.Containers, 1)
	sc := pod.Spec.Containers[0].SecurityContext
	require.NotNil(t, sc)
	require.Equal(t, int64(0), *sc.RunAsUser)
	require.NotEmpty(t, sc.Capabilities.Add)
	require.Equal(t, corev1.SeccompProfileTypeUnconfined, sc.SeccompProfile.Type)
	require.Equal(t, corev1.AppArmorProfileTypeUnconfined, sc.AppArmorProfile.Type)

	tolerates := false
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == v1alpha1.SandboxClassTaintKey && tol.Value == string(class) && tol.Effect == corev1.TaintEffectNoSchedule {
			tolerates = true
		}
	}
	require.True(t, tolerates, "tolerates %s=%s:NoSchedule: %+v", v1alpha1.SandboxClassTaintKey, class, pod.Spec.Tolerations)
	kvm := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceName(v1alpha1.KVMResource)]
	if class == v1alpha1.SandboxClassMicroVM {
		require.Equal(t, int64(1), kvm.Value(), "a micro-VM worker's %s limit", v1alpha1.KVMResource)
	} else {
		require.True(t, kvm.IsZero(), "a gVisor worker asks for no %s", v1alpha1.KVMResource)
	}
	require.Equal(t, v1alpha1.DefaultWorkerServiceAccount, pod.Spec.ServiceAccountName)
}
