package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// The policy's parameters: the ConfigMap and its key of node keys.
const (
	policyParams      = "ate-orchestrator-workerpool-policy"
	protectedNodeKeys = "protectedNodeKeys"
)

// installPolicy applies `kustomize build deploy/policy` as shipped, as an
// admin would with `kubectl apply -k deploy/policy` after deploy/.
func installPolicy(t *testing.T) {
	t.Helper()
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// deploy/ creates ate-system, where the policy's parameters live.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}
	if err := env.Kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "creating namespace %s", systemNamespace)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy/policy")
	require.NoError(t, err, "kustomize build deploy/policy")
	kinds := map[string]int{}
	var applied []*unstructured.Unstructured
	t.Cleanup(func() {
		// The policy is cluster-wide: remove it so the package's other
		// tests' pools (images of no registry) are admitted again.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, u := range applied {
			if err := env.Kube.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		// The bindings unload asynchronously: wait until a pool of any
		// image is admitted again (a dry run).
		probe := &atev1alpha1.WorkerPool{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: atev1alpha1.WorkerPoolSpec{
				Replicas:       ptr.To[int32](1),
				WorkerImage:    "evil.example/miner:latest",
				SandboxClasses: []atev1alpha1.WorkerPoolSandboxClass{{Name: atev1alpha1.SandboxClassGVisor}},
			},
		}
		var err error
		require.Eventually(t, func() bool {
			err = env.Kube.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return err == nil
		}, 50*time.Second, 200*time.Millisecond, "deploy/policy still refuses pools after its removal: %v", err)
	})
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(b))
		require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("ate-policy-test"), client.ForceOwnership),
			"applying %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		kinds[u.GetKind()]++
		applied = append(applied, u)
	}
	for _, k := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ConfigMap"} {
		require.Equal(t, 1, kinds[k], "kustomize build deploy/policy: want one %s", k)
	}
}

// TestWorkerPoolAdmissionPolicy applies deploy/policy and checks that
// WorkerPools that would give their creator a privileged pod on the control
// plane, or one running an image from anywhere, are refused with a message
// naming the field, and that a compliant pool is admitted.
func TestWorkerPoolAdmissionPolicy(t *testing.T) {
	env := testenv.Current()
	installPolicy(t)
	ns := env.Namespace(t)

	pool := func(name string, mut func(*atev1alpha1.WorkerPool)) *atev1alpha1.WorkerPool {
		p := &atev1alpha1.WorkerPool{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: atev1alpha1.WorkerPoolSpec{
				Replicas:       ptr.To[int32](1),
				WorkerImage:    "registry.example/ate/counter-worker:v0.1.0", // the shipped default registry
				SandboxClasses: []atev1alpha1.WorkerPoolSandboxClass{{Name: atev1alpha1.SandboxClassGVisor}},
				Template:       &atev1alpha1.WorkerPoolPodTemplate{},
			},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}

	// Bindings are loaded asynchronously: wait until a disallowed image is
	// refused by the policy (a dry run, so nothing is left behind).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe := pool("probe", func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = "evil.example/miner:latest" })
	require.Eventually(t, func() bool {
		err := env.Kube.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "spec.workerImage")
	}, time.Minute, 200*time.Millisecond, "the policy of deploy/policy never refused a WorkerPool with image evil.example/miner:latest")

	cases := []struct {
		name string
		mut  func(*atev1alpha1.WorkerPool)
		want string // "" admitted; else a part of the refusal
	}{
		{"compliant", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"ate.dev/sandbox": "gvisor"}
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ate", Effect: corev1.TaintEffectNoSchedule}}
			p.Spec.Template.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpDoesNotExist},
				}}},
			}}
		}, ""},
		{"image from another registry", func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = "evil.example/miner:latest" },
			"spec.workerImage \"evil.example/miner:latest\" is not from an allowed registry"},
		{"image whose registry only starts like an allowed one", func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = "registry.example/ate-evil/miner:latest" },
			"spec.workerImage \"registry.example/ate-evil/miner:latest\" is not from an allowed registry"},
		{"image without a registry", func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = "busybox" },
			"spec.workerImage \"busybox\" is not from an allowed registry"},
		{"control-plane toleration", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, "spec.template.tolerations must not tolerate the taints of control-plane and system nodes"},
		{"master toleration", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists}}
		}, "spec.template.tolerations must not tolerate the taints of control-plane and system nodes"},
		{"exists-all toleration", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, "spec.template.tolerations must not have an Exists toleration without a key"},
		{"control-plane nodeSelector", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"node-role.kubernetes.io/control-plane": ""}
		}, "spec.template.nodeSelector must not select control-plane or system nodes"},
		{"master nodeSelector", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"node-role.kubernetes.io/master": "true"}
		}, "spec.template.nodeSelector must not select control-plane or system nodes"},
		// Other distributions' control-plane and system nodes.
		{"RKE2 etcd toleration", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/etcd", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}, "spec.template.tolerations must not tolerate the taints of control-plane and system nodes"},
		{"RKE1 controlplane toleration", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/controlplane", Operator: corev1.TolerationOpEqual, Value: "true"}}
		}, "spec.template.tolerations must not tolerate the taints of control-plane and system nodes"},
		{"OpenShift infra nodeSelector", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"node-role.kubernetes.io/infra": ""}
		}, "spec.template.nodeSelector must not select control-plane or system nodes"},
		{"CriticalAddonsOnly toleration (k3s/RKE2 servers, AKS and EKS system pools)", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}
		}, "spec.template.tolerations must not tolerate the taints of control-plane and system nodes"},
		{"AKS system pool nodeSelector", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"kubernetes.azure.com/mode": "system"}
		}, "spec.template.nodeSelector must not select control-plane or system nodes"},
		{"AKS user pool nodeSelector", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"kubernetes.azure.com/mode": "user"}
		}, ""},
		{"AKS system pool required node affinity", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.azure.com/mode", Operator: corev1.NodeSelectorOpIn, Values: []string{"user", "system"}},
				}}},
			}}
		}, "spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution must not select control-plane or system nodes"},
		{"AKS user pool required node affinity", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.azure.com/mode", Operator: corev1.NodeSelectorOpIn, Values: []string{"user"}},
				}}},
			}}
		}, ""},
		{"control-plane required node affinity", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists},
				}}},
			}}
		}, "spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution must not select control-plane or system nodes"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pool(fmt.Sprintf("pool-%d", i), tc.mut)
			var opts []client.CreateOption
			if i > 0 {
				// Only the compliant pool is kept (the update below);
				// another admitted one would hold the package's configs.
				opts = append(opts, client.DryRunAll)
			}
			err := env.Kube.Create(ctx, p, opts...)
			if tc.want == "" {
				require.NoError(t, err, "a compliant WorkerPool must be admitted")
				return
			}
			require.Error(t, err, "WorkerPool (%s) admitted", tc.name)
			require.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "want a refusal by admission, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// An update is checked too: the compliant pool may not be moved onto
	// the control plane afterwards.
	t.Run("update", func(t *testing.T) {
		p := &atev1alpha1.WorkerPool{}
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pool-0"}, p))
		p.Spec.Template.Tolerations = append(p.Spec.Template.Tolerations, corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists})
		err := env.Kube.Update(ctx, p)
		require.Error(t, err, "an update tolerating the control plane was admitted")
		require.Contains(t, err.Error(), "spec.template.tolerations must not tolerate the taints of control-plane and system nodes")
	})

	// The list is the ConfigMap's protectedNodeKeys: an operator's own
	// key is refused, and a default left out of the list is admitted.
	t.Run("configured keys", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: policyParams}, cm))
		shipped := cm.Data[protectedNodeKeys]
		require.Contains(t, shipped, "node-role.kubernetes.io/control-plane", "the shipped list")
		setKeys := func(v string) {
			cm := &corev1.ConfigMap{}
			require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: policyParams}, cm))
			cm.Data[protectedNodeKeys] = v
			require.NoError(t, env.Kube.Update(ctx, cm))
		}
		t.Cleanup(func() { setKeys(shipped) })
		setKeys("node-role.kubernetes.io/control-plane\nexample.com/pool=ops")
		own := pool("own-key", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"example.com/pool": "ops"}
		})
		var err error
		require.Eventually(t, func() bool {
			err = env.Kube.Create(ctx, own.DeepCopy(), client.DryRunAll)
			return err != nil
		}, time.Minute, 200*time.Millisecond, "a nodeSelector on the configured key example.com/pool=ops was admitted")
		require.Contains(t, err.Error(), "spec.template.nodeSelector must not select control-plane or system nodes (node-role.kubernetes.io/control-plane, example.com/pool=ops;")
		other := pool("other-value", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.NodeSelector = map[string]atev1alpha1.LabelValue{"example.com/pool": "batch"}
		})
		require.NoError(t, env.Kube.Create(ctx, other, client.DryRunAll), "another value of a key=value entry")
		etcd := pool("etcd-left-out", func(p *atev1alpha1.WorkerPool) {
			p.Spec.Template.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/etcd", Operator: corev1.TolerationOpExists}}
		})
		require.NoError(t, env.Kube.Create(ctx, etcd, client.DryRunAll), "a default the configured list leaves out")

		// A ConfigMap without the key (an overlay's older one): the
		// policy's own defaults, the shipped list.
		cm = &corev1.ConfigMap{}
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: policyParams}, cm))
		delete(cm.Data, protectedNodeKeys)
		require.NoError(t, env.Kube.Update(ctx, cm))
		require.Eventually(t, func() bool {
			err = env.Kube.Create(ctx, etcd.DeepCopy(), client.DryRunAll)
			return err != nil
		}, time.Minute, 200*time.Millisecond, "with no protectedNodeKeys, an etcd toleration was admitted")
		require.Contains(t, err.Error(), "must not tolerate the taints of control-plane and system nodes (node-role.kubernetes.io/control-plane, node-role.kubernetes.io/master, node-role.kubernetes.io/controlplane, node-role.kubernetes.io/etcd,")
	})

	// The compliant pool follows the gvisor class default: left behind, it
	// would hold TestProductRunsUnderItsRoles's configs. Nothing here adds
	// a finalizer to it, so it is gone once deleted.
	gone := &atev1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-0"}}
	require.NoError(t, client.IgnoreNotFound(env.Kube.Delete(ctx, gone)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Kube.Get(ctx, client.ObjectKeyFromObject(gone), &atev1alpha1.WorkerPool{}))
	}, 30*time.Second, 100*time.Millisecond, "WorkerPool %s/pool-0 not gone after its deletion", ns)
}
