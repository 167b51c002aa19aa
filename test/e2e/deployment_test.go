package e2e

import (
	"context"
	"fmt"
	"k8s.io/client-go/util/retry"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestDeploymentFollowsThePool: a resolved pool gets its Deployment, owned
// by it; scaling, template edits and the Deployment's status flow through;
// an owned field edited by hand is restored while a foreign one survives.
func TestDeploymentFollowsThePool(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	wp := producttest.Pool(ns, "workers", "")
	wp.Spec.Replicas = producttest.Ptr(int32(2))
	// Caches drop a pool's annotations: the status writes made from the
	// cached copy must not drop them from the pool.
	wp.Annotations = map[string]string{"example.com/owner": "infra"}
	wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{
		Labels:       map[string]v1alpha1.LabelValue{"team": "infra"},
		NodeSelector: map[string]v1alpha1.LabelValue{"pool": "sandbox"},
	}
	require.NoError(t, kube.Create(ctx, wp))
	p.WaitForConfig(t, ns, "workers", "gvisor-default", metav1.ConditionTrue)
	d := p.WaitForDeployment(t, ns, "workers", 2)

	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(wp), wp))
	owner := metav1.GetControllerOf(d)
	require.NotNil(t, owner, "the Deployment is controlled by its pool, so deleting the pool deletes it")
	require.Equal(t, "WorkerPool", owner.Kind)
	require.Equal(t, wp.UID, owner.UID)
	require.True(t, *owner.BlockOwnerDeletion)
	require.Equal(t, map[string]string{v1alpha1.WorkerPoolLabel: "workers"}, d.Spec.Selector.MatchLabels)
	require.Equal(t, "infra", d.Spec.Template.Labels["team"])
	require.Equal(t, "workers", d.Spec.Template.Labels[v1alpha1.WorkerPoolLabel])
	require.Equal(t, "sandbox", d.Spec.Template.Spec.NodeSelector["pool"])
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	require.Equal(t, "worker", d.Spec.Template.Spec.Containers[0].Name)
	require.Equal(t, "ateworker-gvisor:v1", d.Spec.Template.Spec.Containers[0].Image)
	// As the API server stores it, the Deployment as the worker caches it
	// (no template, a digest of the product's fields) is up to date: a
	// status change of it costs no apply.
	cached, err := deployment.ForCache(d.DeepCopy())
	require.NoError(t, err)
	require.Empty(t, cached.(*appsv1.Deployment).Spec.Template.Spec.Containers)
	upToDate, err := deployment.CachedUpToDate(cached.(*appsv1.Deployment), wp)
	require.NoError(t, err)
	require.True(t, upToDate, "the cached Deployment should be up to date right after the apply")
	require.Contains(t, d.Spec.Template.Spec.Tolerations, corev1.Toleration{
		Key: v1alpha1.SandboxClassTaintKey, Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule,
	})

	// kubectl scale, through the scale subresource.
	producttest.Scale(t, kube, ns, "workers", 5)
	p.WaitForDeployment(t, ns, "workers", 5)

	// Status follows the Deployment (envtest runs no Deployment controller,
	// so the test plays it).
	d = p.WaitForDeployment(t, ns, "workers", 5)
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.ObservedGeneration = 5, 3, d.Generation
	require.NoError(t, kube.Status().Update(ctx, d))
	producttest.Eventually(t, "pool status to follow the Deployment", func() (bool, string) {
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(wp), wp))
		return wp.Status.Replicas == 5 && wp.Status.ReadyReplicas == 3 && wp.Status.Selector == "ate.dev/worker-pool=workers",
			fmt.Sprintf("replicas=%d ready=%d selector=%q", wp.Status.Replicas, wp.Status.ReadyReplicas, wp.Status.Selector)
	})

	// Another manager sets a field the product does not own; someone edits
	// one it does. The next apply restores the image and keeps the limit.
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(d), d))
	base := d.DeepCopy()
	d.Spec.RevisionHistoryLimit = producttest.Ptr(int32(3))
	d.Spec.Template.Spec.Containers[0].Image = "tampered:latest"
	require.NoError(t, kube.Patch(ctx, d, client.MergeFrom(base), client.FieldOwner("someone-else")))
	producttest.Eventually(t, "the owned image to be restored", func() (bool, string) {
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(d), d))
		return d.Spec.Template.Spec.Containers[0].Image == "ateworker-gvisor:v1", d.Spec.Template.Spec.Containers[0].Image
	})
	require.Equal(t, int32(3), *d.Spec.RevisionHistoryLimit, "a field another manager owns is kept")

	// Clearing a template field clears it on the Deployment.
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(wp), wp))
	wpBase := wp.DeepCopy()
	wp.Spec.Template.NodeSelector = nil
	require.NoError(t, kube.Patch(ctx, wp, client.MergeFrom(wpBase)))
	producttest.Eventually(t, "the node selector to be cleared", func() (bool, string) {
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(d), d))
		_, still := d.Spec.Template.Spec.NodeSelector["pool"]
		return !still, "nodeSelector still set"
	})
	require.Equal(t, deployment.FieldManager, managerOf(d, "f:replicas"), "the product owns the replica count")
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(wp), wp))
	require.Equal(t, "infra", wp.Annotations["example.com/owner"], "the status writes kept the pool's annotations")
}

// managerOf returns the manager that applied a field.
func managerOf(d *appsv1.Deployment, field string) string {
	for _, m := range d.ManagedFields {
		if m.Operation == metav1.ManagedFieldsOperationApply && m.FieldsV1 != nil &&
			strings.Contains(string(m.FieldsV1.Raw), `"`+field+`"`) {
			return m.Manager
		}
	}
	return ""
}

// TestMicroVMDeployment: a microvm pool's workers ask for KVM and mount
// the tun device.
func TestMicroVMDeployment(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	vm := producttest.MicroVMConfig("microvm")
	vm.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
	require.NoError(t, kube.Create(ctx, vm))
	wp := producttest.Pool(ns, "vms", "")
	wp.Spec.SandboxClasses[0].Name = v1alpha1.SandboxClassMicroVM
	require.NoError(t, kube.Create(ctx, wp))
	d := p.WaitForDeployment(t, ns, "vms", 0)
	c := d.Spec.Template.Spec.Containers[0]
	require.Equal(t, "1", c.Resources.Limits.Name(v1alpha1.KVMResource, "").String())
	var tun bool
	for _, m := range c.VolumeMounts {
		tun = tun || m.MountPath == "/dev/net/tun"
	}
	require.True(t, tun, "microvm workers mount /dev/net/tun")
}

// TestScalingCostsTemporalNothing: once a pool has its config, scaling it
// and editing its template reach the Deployment through the worker's pool
// reconciler alone: no workflow is started and no activity runs, and the
// status says the generation was acted on.
func TestScalingCostsTemporalNothing(t *testing.T) {
	started := &activityCounter{}
	p := producttest.Run(t, started)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "idle", "")))
	p.WaitForConfig(t, ns, "idle", "gvisor-default", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "idle", 0)
	activities := started.total()
	runs := func() int {
		resp, err := p.TemporalClient().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = %q", testenv.Current().ClusterName.SwitchWorkflowID(ns, "idle"))})
		require.NoError(t, err)
		return len(resp.Executions)
	}
	require.Equal(t, 1, runs())

	producttest.Scale(t, kube, ns, "idle", 3)
	p.WaitForDeployment(t, ns, "idle", 3)
	// The keeper writes the pool's status while it mirrors the scale: the
	// spec update reads again on a conflict, as any client must.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var wp v1alpha1.WorkerPool
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle"}, &wp); err != nil {
			return err
		}
		wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{Labels: map[string]v1alpha1.LabelValue{"team": "infra"}}
		return kube.Update(ctx, &wp)
	}))
	producttest.Eventually(t, "the template label on the Deployment and the status at the pool's generation", func() (bool, string) {
		var d appsv1.Deployment
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle"}, &d); err != nil {
			return false, err.Error()
		}
		got := p.Get(t, ns, "idle")
		return d.Spec.Template.Labels["team"] == "infra" && got.Status.ObservedGeneration == got.Generation,
			fmt.Sprintf("labels %v, observedGeneration %d of %d", d.Spec.Template.Labels, got.Status.ObservedGeneration, got.Generation)
	})
	require.Equal(t, activities, started.total(), "no activity ran for a scale or a template edit")
	require.Equal(t, 1, runs(), "no switch was started for a scale or a template edit")
}

// activityCounter counts the activities the worker starts, by type.
type activityCounter struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	started map[string]int
}

func (c *activityCounter) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &countedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, counter: c}
}

func (c *activityCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.started {
		n += v
	}
	return n
}

type countedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	counter *activityCounter
}

func (a *countedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	c := a.counter
	c.mu.Lock()
	if c.started == nil {
		c.started = map[string]int{}
	}
	c.started[activity.GetInfo(ctx).ActivityType.Name]++
	c.mu.Unlock()
	return a.Next.ExecuteActivity(ctx, in)
}
