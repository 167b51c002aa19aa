package deployment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	fakeappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

// newFakeApps returns an apps/v1 client backed by client-go's field-managed
// object tracker, which merges applies with the real structured-merge-diff
// rules: a field the manager stops declaring is removed unless another
// manager owns it.
func newFakeApps(t *testing.T) (*fakeappsv1.FakeAppsV1, *[]clienttesting.Action) {
	t.Helper()
	tracker := clienttesting.NewFieldManagedObjectTracker(scheme.Scheme,
		scheme.Codecs.UniversalDecoder(), applyconfigurations.NewTypeConverter(scheme.Scheme))
	fake := &clienttesting.Fake{}
	var actions []clienttesting.Action
	fake.AddReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		actions = append(actions, a)
		return false, nil, nil
	})
	fake.AddReactor("*", "*", clienttesting.ObjectReaction(tracker))
	return &fakeappsv1.FakeAppsV1{Fake: fake}, &actions
}

func TestApplyUsesFieldManagerAndForce(t *testing.T) {
	apps, actions := newFakeApps(t)
	pool := newPool(v1alpha1.SandboxClassMicroVM, fullTemplate())
	d, err := Apply(context.Background(), apps, pool)
	require.NoError(t, err)
	require.Equal(t, poolName, d.Name)
	require.Equal(t, poolNS, d.Namespace)
	require.Len(t, *actions, 1)
	patch, ok := (*actions)[0].(clienttesting.PatchActionImpl)
	require.True(t, ok, "apply is a patch")
	require.Equal(t, types.ApplyPatchType, patch.GetPatchType())
	require.Equal(t, metav1.PatchOptions{FieldManager: "ate-orchestrator", Force: ptr.To(true)}, patch.PatchOptions)

	owners := map[string]bool{}
	for _, m := range d.ManagedFields {
		owners[m.Manager] = true
		require.Equal(t, metav1.ManagedFieldsOperationApply, m.Operation)
	}
	require.Equal(t, map[string]bool{FieldManager: true}, owners)
}

func TestApplyIsIdempotent(t *testing.T) {
	apps, _ := newFakeApps(t)
	pool := newPool(v1alpha1.SandboxClassGVisor, fullTemplate())
	first, err := Apply(context.Background(), apps, pool)
	require.NoError(t, err)
	second, err := Apply(context.Background(), apps, pool)
	require.NoError(t, err)
	require.Equal(t, first.Spec, second.Spec)
	require.Equal(t, first.Labels, second.Labels)
	require.Equal(t, first.Annotations, second.Annotations)
}

// TestApplyClearsTemplateFields: fields the orchestrator declared and stops
// declaring disappear from the Deployment, fields another manager set stay.
func TestApplyClearsTemplateFields(t *testing.T) {
	for _, class := range []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM} {
		t.Run(string(class), func(t *testing.T) {
			ctx := context.Background()
			apps, _ := newFakeApps(t)
			pool := newPool(class, fullTemplate())
			d, err := Apply(ctx, apps, pool)
			require.NoError(t, err)
			pod := d.Spec.Template.Spec
			require.Equal(t, "ate-workers", pod.PriorityClassName)
			require.NotNil(t, pod.Affinity)
			require.Len(t, pod.NodeSelector, 2)
			require.Len(t, pod.Tolerations, 3)
			require.Equal(t, "custom-worker", pod.ServiceAccountName)
			require.Equal(t, resource.MustParse("4Gi"), pod.Containers[0].Resources.Limits[corev1.ResourceMemory])

			// Someone else (kubectl rollout restart) annotates the pods.
			d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "now"
			_, err = apps.Deployments(poolNS).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-rollout"})
			require.NoError(t, err)

			// Clear every template field.
			pool.Spec.Template = nil
			d, err = Apply(ctx, apps, pool)
			require.NoError(t, err)

			pod = d.Spec.Template.Spec
			require.Empty(t, pod.PriorityClassName)
			require.Nil(t, pod.Affinity)
			require.Nil(t, pod.NodeSelector)
			require.Equal(t, []corev1.Toleration{{
				Key: "ate.dev/sandboxClass", Operator: corev1.TolerationOpEqual, Value: string(class), Effect: corev1.TaintEffectNoSchedule,
			}}, pod.Tolerations)
			require.Equal(t, "ateworker", pod.ServiceAccountName)
			res := pod.Containers[0].Resources
			require.Nil(t, res.Requests)
			if class == v1alpha1.SandboxClassMicroVM {
				require.Equal(t, corev1.ResourceList{"ate.dev/kvm": resource.MustParse("1")}, res.Limits)
			} else {
				require.Nil(t, res.Limits)
			}
			require.Equal(t, map[string]string{"ate.dev/worker-pool": poolName}, d.Labels)
			require.Equal(t, map[string]string{"ate.dev/worker-pool": poolName}, d.Spec.Template.Labels)
			require.Empty(t, d.Annotations)
			require.Equal(t, map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}, d.Spec.Template.Annotations,
				"another manager's annotation survives")

			// Scaling is just another apply.
			pool.Spec.Replicas = ptr.To[int32](0)
			d, err = Apply(ctx, apps, pool)
			require.NoError(t, err)
			require.Equal(t, int32(0), *d.Spec.Replicas)
		})
	}
}

func TestApplyReturnsBuildErrors(t *testing.T) {
	apps, actions := newFakeApps(t)
	pool := newPool(v1alpha1.SandboxClassGVisor, nil)
	pool.UID = ""
	_, err := Apply(context.Background(), apps, pool)
	require.ErrorContains(t, err, "no UID")
	require.Empty(t, *actions, "nothing is sent for an invalid pool")
	_, err = apps.Deployments(poolNS).Get(context.Background(), poolName, metav1.GetOptions{})
	require.Error(t, err)
}
