package producttest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

func Repin(t testing.TB, kube client.Client, ns, name, config string) {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp))
	base := wp.DeepCopy()
	wp.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: config}
	require.NoError(t, kube.Patch(context.Background(), &wp, client.MergeFrom(base)))
}

func ResolvedCondition(wp *v1alpha1.WorkerPool) metav1.Condition {
	return wp.Status.SandboxClasses[0].Conditions[0]
}

func SetDefault(t testing.TB, kube client.Client, name string, on bool) {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(context.Background(), client.ObjectKey{Name: name}, &c))
	base := c.DeepCopy()
	if on {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, v1alpha1.ClassDefaultAnnotation, "true")
	} else {
		delete(c.Annotations, v1alpha1.ClassDefaultAnnotation)
	}
	require.NoError(t, kube.Patch(context.Background(), &c, client.MergeFrom(base)))
}
