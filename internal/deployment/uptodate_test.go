package deployment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1/fake"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestUpToDate(t *testing.T) {
	tests := []struct {
		name string
		pool func() *v1alpha1.WorkerPool
		// change acts after the apply: on the pool (what is wanted) or, as
		// another manager, on the Deployment (what is there).
		change func(t *testing.T, apps *fakeappsv1.FakeAppsV1, pool *v1alpha1.WorkerPool, d *appsv1.Deployment)
		want   bool
	}{
		{name: "just applied, gvisor", pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) }, want: true},
		{name: "just applied, microvm", pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassMicroVM, fullTemplate()) }, want: true},
		{name: "just applied, no template", pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, nil) }, want: true},
		{
			name: "quantities written differently are the same",
			pool: func() *v1alpha1.WorkerPool {
				p := newPool(v1alpha1.SandboxClassGVisor, fullTemplate())
				p.Spec.Template.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.5")
				return p
			},
			want: true,
		},
		{
			name: "the pool scaled",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) },
			change: func(_ *testing.T, _ *fakeappsv1.FakeAppsV1, p *v1alpha1.WorkerPool, _ *appsv1.Deployment) {
				p.Spec.Replicas = ptr.To[int32](7)
			},
		},
		{
			name: "a template field cleared",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) },
			change: func(_ *testing.T, _ *fakeappsv1.FakeAppsV1, p *v1alpha1.WorkerPool, _ *appsv1.Deployment) {
				p.Spec.Template.NodeSelector = nil
			},
		},
		{
			name: "a new incarnation of the pool",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, nil) },
			change: func(_ *testing.T, _ *fakeappsv1.FakeAppsV1, p *v1alpha1.WorkerPool, _ *appsv1.Deployment) {
				p.UID = "another-uid"
			},
		},
		{
			name: "an owned field edited by someone else",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) },
			change: func(t *testing.T, apps *fakeappsv1.FakeAppsV1, _ *v1alpha1.WorkerPool, d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "tampered:latest"
				updateAs(t, apps, d)
			},
		},
		{
			name: "an owned field removed by someone else",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) },
			change: func(t *testing.T, apps *fakeappsv1.FakeAppsV1, _ *v1alpha1.WorkerPool, d *appsv1.Deployment) {
				d.Spec.Template.Spec.PriorityClassName = ""
				updateAs(t, apps, d)
			},
		},
		{
			name: "a field only someone else sets",
			pool: func() *v1alpha1.WorkerPool { return newPool(v1alpha1.SandboxClassGVisor, fullTemplate()) },
			change: func(t *testing.T, apps *fakeappsv1.FakeAppsV1, _ *v1alpha1.WorkerPool, d *appsv1.Deployment) {
				d.Spec.RevisionHistoryLimit = ptr.To[int32](3)
				d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "now"
				updateAs(t, apps, d)
			},
			want: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			apps, _ := newFakeApps(t)
			pool := tt.pool()
			d, err := Apply(ctx, apps, pool)
			require.NoError(t, err)
			if tt.change != nil {
				tt.change(t, apps, pool, d)
				d, err = apps.Deployments(poolNS).Get(ctx, poolName, metav1.GetOptions{})
				require.NoError(t, err)
			}
			got, err := UpToDate(d, pool)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)

			// The worker's cached copy, without its pod template or
			// managedFields, answers the same.
			cached, err := ForCache(d.DeepCopy())
			require.NoError(t, err)
			require.Empty(t, cached.(*appsv1.Deployment).ManagedFields)
			require.Empty(t, cached.(*appsv1.Deployment).Spec.Template.Spec.Containers)
			got, err = CachedUpToDate(cached.(*appsv1.Deployment), pool)
			require.NoError(t, err)
			require.Equal(t, tt.want, got, "on the cached copy")

			// Whatever differed, an apply makes it as wanted.
			d, err = Apply(ctx, apps, pool)
			require.NoError(t, err)
			got, err = UpToDate(d, pool)
			require.NoError(t, err)
			require.True(t, got, "after an apply")
		})
	}
}

func TestUpToDateOfADeploymentNeverApplied(t *testing.T) {
	ctx := context.Background()
	apps, _ := newFakeApps(t)
	pool := newPool(v1alpha1.SandboxClassGVisor, nil)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: poolName, Namespace: poolNS}}
	d, err := apps.Deployments(poolNS).Create(ctx, d, metav1.CreateOptions{FieldManager: "someone-else"})
	require.NoError(t, err)
	got, err := UpToDate(d, pool)
	require.NoError(t, err)
	require.False(t, got)
}

func TestUpToDateReturnsBuildErrors(t *testing.T) {
	pool := newPool(v1alpha1.SandboxClassGVisor, nil)
	pool.Spec.Replicas = nil
	_, err := UpToDate(&appsv1.Deployment{}, pool)
	require.ErrorContains(t, err, "spec.replicas is not set")
}

func updateAs(t *testing.T, apps *fakeappsv1.FakeAppsV1, d *appsv1.Deployment) {
	t.Helper()
	_, err := apps.Deployments(poolNS).Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "someone-else"})
	require.NoError(t, err)
}
