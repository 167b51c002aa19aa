package producttest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// WaitForDeployment polls until the pool's Deployment exists with replicas.
func (p *Product) WaitForDeployment(t testing.TB, ns, name string, replicas int32) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	Eventually(t, fmt.Sprintf("Deployment %s/%s with %d replicas", ns, name, replicas), func() (bool, string) {
		if err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err.Error()
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == replicas, fmt.Sprintf("replicas=%v", d.Spec.Replicas)
	})
	return &d
}

// RequireNoDeployment asserts the pool has no Deployment after its workflow
// finished a pass over its current generation.
func (p *Product) RequireNoDeployment(t testing.TB, ns, name string) {
	t.Helper()
	var d appsv1.Deployment
	err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d)
	require.True(t, apierrors.IsNotFound(err), "a pool that never resolved has no Deployment, got %v", err)
}

// Scale changes spec.replicas through the scale subresource, as kubectl scale does.
func Scale(t testing.TB, kube client.Client, ns, name string, replicas int32) {
	t.Helper()
	wp := &v1alpha1.WorkerPool{}
	wp.Namespace, wp.Name = ns, name
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	require.NoError(t, kube.SubResource("scale").Patch(context.Background(), wp, patch))
}
