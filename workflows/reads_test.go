package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// liveRequests counts the reads the activities make of the API server
// (never of the worker's cache), by kind.
type liveRequests struct{ ConfigGets, PoolGets, PoolLists int }

// countingActivities are the real activities on a fake API server holding
// the given objects, with the worker's cache up to date with it, and the
// count of their live reads.
func countingActivities(t *testing.T, objs ...ctrlclient.Object) (*activities.Activities, *liveRequests) {
	t.Helper()
	store := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.WorkerPool{}).
		WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
			return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
		}).Build()
	n := &liveRequests{}
	live := interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			switch obj.(type) {
			case *v1alpha1.SandboxConfig:
				n.ConfigGets++
			case *v1alpha1.WorkerPool:
				n.PoolGets++
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c ctrlclient.WithWatch, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
			if _, ok := list.(*v1alpha1.WorkerPoolList); ok {
				n.PoolLists++
			}
			return c.List(ctx, list, opts...)
		},
	})
	return &activities.Activities{Live: live, Cache: store, Clientset: k8sfake.NewSimpleClientset(), Instance: "test"}, n
}

func countingEnv(t *testing.T, acts *activities.Activities) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflows(env)
	RegisterActivities(env, acts)
	return env
}

func protectedConfig(name string, deleting bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha1.ProtectionFinalizer}},
		Spec:       v1alpha1.SandboxConfigSpec{SandboxClass: v1alpha1.SandboxClassGVisor},
	}
	if deleting {
		c.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	}
	return c
}

func poolOn(config string) *v1alpha1.WorkerPool {
	return &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool", UID: "uid-1", Generation: 3},
		Spec:       v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}}},
		Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config},
		}}},
	}
}

// TestReadsPerSwitchAndListsPerRelease counts what a switch and a release
// ask the API server, with the worker's cache up to date (the common case):
// the live read of a switch's target after its claim is made once, and a
// release that lets its config go lists the pools live once.
func TestReadsPerSwitchAndListsPerRelease(t *testing.T) {
	t.Run("a confirmed switch", func(t *testing.T) {
		pool := poolOn("old")
		acts, n := countingActivities(t, pool, protectedConfig("old", false), protectedConfig("new", false))
		env := countingEnv(t, acts)
		var rv v1alpha1.WorkerPool
		require.NoError(t, acts.Cache.Get(context.Background(), ctrlclient.ObjectKeyFromObject(pool), &rv))
		in := switchIn
		in.PoolResourceVersion = rv.ResourceVersion
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.SwitchWorkflowID("ns", "pool")})
		env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
		require.NoError(t, env.GetWorkflowError())
		var res wfapi.SwitchResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
		t.Logf("reads per switch: %+v", *n)
		require.Equal(t, liveRequests{ConfigGets: 1}, *n,
			"one live read of the target, Confirm's, after the claim; the pool from the cache at the versions the switch knows")
	})
	t.Run("a confirmed switch whose cache has not seen its claim yet", func(t *testing.T) {
		// The confirm runs right after the claim, in the same workflow
		// task: the watch event of the claim's write is usually not in the
		// cache yet. The confirm starts from the pool as the claim's write
		// returned it, at the version it knows, rather than reading it.
		pool := poolOn("old")
		acts, n := countingActivities(t, pool, protectedConfig("old", false), protectedConfig("new", false))
		var planned v1alpha1.WorkerPool
		require.NoError(t, acts.Cache.Get(context.Background(), ctrlclient.ObjectKeyFromObject(pool), &planned))
		acts.Cache = frozenPools{Reader: acts.Cache, pool: &planned}
		env := countingEnv(t, acts)
		in := switchIn
		in.PoolResourceVersion = planned.ResourceVersion
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.SwitchWorkflowID("ns", "pool")})
		env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
		require.NoError(t, env.GetWorkflowError())
		var res wfapi.SwitchResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
		t.Logf("reads per switch: %+v", *n)
		require.Equal(t, liveRequests{ConfigGets: 1}, *n,
			"one live read of the target, Confirm's; the claim's pool from the cache at the planned version, the confirm's as the claim wrote it")
		var after v1alpha1.WorkerPool
		require.NoError(t, acts.Live.Get(context.Background(), ctrlclient.ObjectKeyFromObject(pool), &after))
		require.Equal(t, "new", after.Status.ClassStatus(v1alpha1.SandboxClassGVisor).ConfigRef.NameOf(), "the confirm landed")
	})
	t.Run("a release that lets its config go", func(t *testing.T) {
		acts, n := countingActivities(t, poolOn("new"), protectedConfig("old", true))
		env := countingEnv(t, acts)
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.ReleaseWorkflowID("old")})
		env.ExecuteWorkflow(wfapi.ReleaseWorkflow, wfapi.ReleaseInput{Config: "old"})
		require.NoError(t, env.GetWorkflowError())
		var outcome string
		require.NoError(t, env.GetWorkflowResult(&outcome))
		require.Equal(t, wfapi.OutcomeReleased, outcome)
		t.Logf("reads per release: %+v", *n)
		require.Equal(t, liveRequests{ConfigGets: 2, PoolLists: 1}, *n,
			"the look's live read, Unprotect's read of the incarnation; one live list, Unprotect's")
	})
}

// frozenPools is a worker cache that never receives a pool's watch events:
// it shows the pool as it was when the switch was planned.
type frozenPools struct {
	ctrlclient.Reader
	pool *v1alpha1.WorkerPool
}

func (f frozenPools) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	if p, ok := obj.(*v1alpha1.WorkerPool); ok && key == ctrlclient.ObjectKeyFromObject(f.pool) {
		f.pool.DeepCopyInto(p)
		return nil
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}
