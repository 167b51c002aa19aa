package starter

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestCacheTransforms: the starter's cache keeps of a pool what it plans
// from, without the worker pod template, image or annotations.
// internal/cached tests the transform field by field; this tests that the
// starter uses it.
func TestCacheTransforms(t *testing.T) {
	byObject := cacheByObject()
	var found bool
	for obj, opts := range byObject {
		if _, ok := obj.(*v1alpha1.WorkerPool); !ok {
			continue
		}
		found = true
		require.NotNil(t, opts.Transform)
		out, err := opts.Transform(&v1alpha1.WorkerPool{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2, Labels: map[string]string{v1alpha1.CanaryLabel: "true"},
				Annotations: map[string]string{"a": "b"}},
			Spec: v1alpha1.WorkerPoolSpec{WorkerImage: "img", Template: &v1alpha1.WorkerPoolPodTemplate{PriorityClassName: "high"},
				SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}}},
		})
		require.NoError(t, err)
		pool := out.(*v1alpha1.WorkerPool)
		require.Nil(t, pool.Spec.Template)
		require.Empty(t, pool.Spec.WorkerImage)
		require.Empty(t, pool.Annotations)
		require.Equal(t, int64(2), pool.Generation)
		require.Equal(t, "true", pool.Labels[v1alpha1.CanaryLabel])
		require.Len(t, pool.Spec.SandboxClasses, 1)
	}
	require.True(t, found, "the starter's pools need a transform of their own")
}
