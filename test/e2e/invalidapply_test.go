package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// applyCounter counts the server-side applies of one Deployment that go
// through it to the API server.
type applyCounter struct {
	next http.RoundTripper
	path string
	n    *atomic.Int64
}

func (c applyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch && req.URL.Path == c.path &&
		strings.HasPrefix(req.Header.Get("Content-Type"), string(types.ApplyPatchType)) {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// poolKeeperReconciles is controller-runtime's count of the pool keeper's
// passes in this process.
func poolKeeperReconciles(t *testing.T) float64 {
	return poolKeeperCounter(t, "controller_runtime_reconcile_total")
}

// TestInvalidApplyIsNotRetried: a pool the CRD admits but whose Deployment
// the API server calls Invalid (requests above limits) is reported as
// DeploymentInvalid, with the API server's words, and not applied again
// while its spec stays as it is, however often the keeper looks at it (the
// worker's applies are counted on the wire); a spec change tries once more,
// and a spec that fixes it gets its Deployment.
func TestInvalidApplyIsNotRetried(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	ns := env.Namespace(t)
	var applies atomic.Int64
	workerRest := rest.CopyConfig(env.RestConfig)
	workerRest.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return applyCounter{next: rt, path: fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/workers", ns), n: &applies}
	})
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, WorkerRest: workerRest}).Run(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	wp := producttest.Pool(ns, "workers", "")
	wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{Resources: &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}
	require.NoError(t, kube.Create(ctx, wp), "the CRD admits it")
	p.WaitForConfig(t, ns, "workers", "gvisor-default", metav1.ConditionTrue)
	c := waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionFalse, v1alpha1.ReasonDeploymentInvalid)
	require.Contains(t, c.Message, `applying Deployment "workers": `)
	require.Contains(t, c.Message, "must be less than or equal to cpu limit")
	require.Contains(t, c.Message, "not retried until the WorkerPool's spec changes")
	p.RequireNoDeployment(t, ns, "workers")

	// The keeper looks again (a metadata edit, no spec change), three
	// times: no apply.
	poke := func(i int) {
		t.Helper()
		before := poolKeeperReconciles(t)
		require.NoError(t, kube.Patch(ctx, &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"}},
			client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/poke":"%d"}}}`, i))))
		producttest.Eventually(t, "the pool keeper's look after the poke", func() (bool, string) {
			got := poolKeeperReconciles(t)
			return got > before, fmt.Sprintf("%v passes, %v before", got, before)
		})
	}
	applied := applies.Load()
	require.Positive(t, applied)
	for i := range 3 {
		poke(i)
	}
	require.Equal(t, applied, applies.Load(), "an apply the API server called invalid was retried with the same spec")
	gen := p.Get(t, ns, "workers").Generation

	// A spec change (still invalid) is tried once more, then waits again.
	require.NoError(t, kube.Patch(ctx, &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))))
	require.Equal(t, gen+1, p.Get(t, ns, "workers").Generation)
	waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionFalse, v1alpha1.ReasonDeploymentInvalid)
	require.Greater(t, applies.Load(), applied, "a spec change is tried")
	applied = applies.Load()
	poke(3)
	require.Equal(t, applied, applies.Load(), "tried once per spec")

	// A spec that fixes it gets its Deployment.
	require.NoError(t, kube.Patch(ctx, &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"resources":{"limits":{"cpu":"2"}}}}}`))))
	p.WaitForDeployment(t, ns, "workers", 1)
	waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionTrue, v1alpha1.ReasonDeploymentApplied)
}
