package worker

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestCacheTransforms: the worker's cache keeps a pool's spec whole (the
// keeper builds the Deployment from it) without its annotations, and a
// Deployment without its pod template; only the pools' Deployments.
// internal/cached and internal/deployment test the transforms field by
// field; this tests that the worker uses them.
func TestCacheTransforms(t *testing.T) {
	byObject, err := cacheByObject()
	require.NoError(t, err)
	var pools, deployments *cache.ByObject
	for obj, opts := range byObject {
		switch obj.(type) {
		case *v1alpha1.WorkerPool:
			pools = &opts
		case *appsv1.Deployment:
			deployments = &opts
		}
	}
	require.NotNil(t, pools, "the worker's pools need a transform of their own")
	require.NotNil(t, deployments, "the worker's Deployments need a transform of their own")

	out, err := pools.Transform(&v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "b"}},
		Spec:       v1alpha1.WorkerPoolSpec{WorkerImage: "img", Template: &v1alpha1.WorkerPoolPodTemplate{PriorityClassName: "high"}},
	})
	require.NoError(t, err)
	pool := out.(*v1alpha1.WorkerPool)
	require.Empty(t, pool.Annotations)
	require.Equal(t, "img", pool.Spec.WorkerImage)
	require.Equal(t, "high", pool.Spec.Template.PriorityClassName)

	out, err = deployments.Transform(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker"}}}}}})
	require.NoError(t, err)
	require.Empty(t, out.(*appsv1.Deployment).Spec.Template.Spec.Containers)
	require.True(t, deployments.Label.Matches(labels.Set{v1alpha1.WorkerPoolLabel: "p"}))
	require.False(t, deployments.Label.Matches(labels.Set{"app": "other"}), "only the pools' Deployments")
}
