package crashtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
)

// Bounds. Activities run with a 10s start-to-close timeout and no
// heartbeat: an activity whose worker died is retried only after it, so
// every bound after a kill leaves room for one or two of them.
const (
	stepBound   = 100 * time.Second // one step of a scenario, through a kill
	settleBound = 150 * time.Second // everything settled after the last change
)

// eventually polls cond until it holds or the bound passes.
func eventually(t testing.TB, bound time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	producttest.EventuallyWithin(t, bound, what, cond)
}

func shortID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ptr[T any](v T) *T { return &v }

// gvisorConfig is a gvisor SandboxConfig: every version has a pauseImage.
func gvisorConfig(name string, classDefault bool) *v1alpha1.SandboxConfig {
	return producttest.GVisorConfig(name, classDefault)
}

// microvmConfig is a microvm SandboxConfig: no pauseImage.
func microvmConfig(name string, classDefault bool) *v1alpha1.SandboxConfig {
	c := producttest.MicroVMConfig(name)
	setDefault(c, classDefault)
	return c
}

func configOf(class v1alpha1.SandboxClass, name string, classDefault bool) *v1alpha1.SandboxConfig {
	if class == v1alpha1.SandboxClassMicroVM {
		return microvmConfig(name, classDefault)
	}
	return gvisorConfig(name, classDefault)
}

func setDefault(c *v1alpha1.SandboxConfig, classDefault bool) {
	if classDefault {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[v1alpha1.ClassDefaultAnnotation] = "true"
	} else {
		delete(c.Annotations, v1alpha1.ClassDefaultAnnotation)
	}
}

// newPool is a WorkerPool of one class, pinned when configRef is set.
func newPool(ns, name string, class v1alpha1.SandboxClass, configRef string) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       ptr(int32(0)),
			WorkerImage:    "ateworker-" + string(class) + ":v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: class}},
		},
	}
	if configRef != "" {
		p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: configRef}
	}
	return p
}

// patchPool changes a pool's spec with a merge patch.
func patchPool(ctx context.Context, kube client.Client, ns, name string, mutate func(*v1alpha1.WorkerPool)) error {
	var wp v1alpha1.WorkerPool
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp); err != nil {
		return err
	}
	base := wp.DeepCopy()
	mutate(&wp)
	return kube.Patch(ctx, &wp, client.MergeFrom(base))
}

func pin(config string) func(*v1alpha1.WorkerPool) {
	return func(wp *v1alpha1.WorkerPool) {
		if config == "" {
			wp.Spec.SandboxClasses[0].ConfigRef = nil
		} else {
			wp.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: config}
		}
	}
}

func scale(n int32) func(*v1alpha1.WorkerPool) {
	return func(wp *v1alpha1.WorkerPool) { wp.Spec.Replicas = &n }
}

// patchDefault annotates a config as class default, or removes the annotation.
func patchDefault(ctx context.Context, kube client.Client, name string, classDefault bool) error {
	var c v1alpha1.SandboxConfig
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
		return err
	}
	base := c.DeepCopy()
	setDefault(&c, classDefault)
	if !classDefault {
		// A merge patch removes a key only when it says null.
		return kube.Patch(ctx, &c, client.RawPatch("application/merge-patch+json",
			fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.ClassDefaultAnnotation)))
	}
	return kube.Patch(ctx, &c, client.MergeFrom(base))
}

func createAfterOthers(t testing.TB, kube client.Client, c *v1alpha1.SandboxConfig) {
	t.Helper()
	producttest.CreateAfterOthers(t, kube, c)
}

// waitPool polls until the pool's only class names want in configRef, with
// no claim pending and the given Resolved status, at the pool's generation.
func waitPool(t testing.TB, ns, name, want string, resolved metav1.ConditionStatus) *v1alpha1.WorkerPool {
	t.Helper()
	kube := testenv.Current().Kube
	var got v1alpha1.WorkerPool
	eventually(t, stepBound, fmt.Sprintf("WorkerPool %s/%s on %q with Resolved=%s", ns, name, want, resolved), func() (bool, string) {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false, err.Error()
		}
		if len(got.Status.SandboxClasses) == 0 {
			return false, "no class status"
		}
		st := got.Status.SandboxClasses[0]
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		ok := st.ConfigRef.NameOf() == want && st.PendingConfigRef == nil && c != nil && c.Status == resolved &&
			c.ObservedGeneration == got.Generation && got.Status.ObservedGeneration == got.Generation
		return ok, fmt.Sprintf("configRef=%q pending=%q condition=%+v", st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), c)
	})
	return &got
}

func waitGone(t testing.TB, obj client.Object) {
	t.Helper()
	kube := testenv.Current().Kube
	eventually(t, stepBound, fmt.Sprintf("%s to be gone", obj.GetName()), func() (bool, string) {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there: finalizers=%v deleting=%v err=%v", obj.GetFinalizers(), obj.GetDeletionTimestamp() != nil, err)
	})
}

// poolEvents returns the events about a pool as "Type Reason: note", oldest first.
func poolEvents(t testing.TB, ns, name string) []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testenv.Current().RestConfig)
	require.NoError(t, err)
	return producttest.PoolEvents(t, cs, ns, name)
}

func waitEvents(t testing.TB, ns, name string, want []string) {
	t.Helper()
	eventually(t, stepBound, fmt.Sprintf("the events of WorkerPool %s/%s", ns, name), func() (bool, string) {
		got := poolEvents(t, ns, name)
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// starterStandIn does what the starter does for the changes a test makes,
// for tests that run several workers side by side, each on its own task
// queue: a real starter starts the switches of every pool of the cluster on
// its one task queue and would start other tests' switches there.
type starterStandIn struct{ taskQueue string }

// pool starts the switch the pool's next move needs, planned on a live read
// as the starter plans it on its cache. While a switch of the pool is still
// running (finishing, or its worker killed) it keeps trying in the
// background, as the starter's requeue does, until the test ends.
func (s starterStandIn) pool(t testing.TB, ns, name string) {
	t.Helper()
	env := testenv.Current()
	key := types.NamespacedName{Namespace: ns, Name: name}
	_, err := starter.StartNext(context.Background(), env.Kube, env.Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, s.taskQueue), key)
	if !errors.Is(err, wfapi.ErrSwitchRunning) {
		require.NoError(t, err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := starter.StartNext(ctx, env.Kube, env.Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, s.taskQueue), key)
			if !errors.Is(err, wfapi.ErrSwitchRunning) {
				if err != nil && ctx.Err() == nil {
					t.Logf("standing in for the starter on WorkerPool %s: %v", key, err)
				}
				return
			}
		}
	}()
}

func (s starterStandIn) release(t testing.TB, config string) {
	t.Helper()
	require.NoError(t, wfapi.SignalRelease(context.Background(), testenv.Current().Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, s.taskQueue), config))
}

// waitRelease polls visibility until the release workflow of a config
// reports an outcome.
func waitRelease(t testing.TB, config, outcome string) {
	t.Helper()
	waitQuery(t, fmt.Sprintf("WorkflowId = %q AND Outcome = %q", testenv.Current().ClusterName.ReleaseWorkflowID(config), outcome))
}

// waitQuery polls until a visibility query matches a workflow.
func waitQuery(t testing.TB, query string) {
	t.Helper()
	eventually(t, stepBound, "a workflow matching "+query, func() (bool, string) {
		resp, err := testenv.Current().Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) > 0, fmt.Sprintf("%d executions match %s", len(resp.Executions), query)
	})
}

// waitSwitchesDone polls until the pool has no switch running: its latest
// switch run (if any) is closed. A worker stopped while an activity it ran
// is being reported loses that completion, which then waits out the
// activity's start-to-close timeout.
func waitSwitchesDone(t testing.TB, ns, name string) {
	t.Helper()
	id := testenv.Current().ClusterName.SwitchWorkflowID(ns, name)
	eventually(t, stepBound, "the switches of WorkerPool "+ns+"/"+name+" to be done", func() (bool, string) {
		d, err := testenv.Current().Temporal.DescribeWorkflowExecution(context.Background(), id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		status := d.WorkflowExecutionInfo.Status
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, "latest switch run " + status.String()
	})
}

// waitReleased polls until the release workflow of a config completed
// having released it.
func waitReleased(t testing.TB, config string) {
	t.Helper()
	waitQuery(t, fmt.Sprintf("WorkflowId = %q AND Outcome = %q AND ExecutionStatus = 'Completed'", testenv.Current().ClusterName.ReleaseWorkflowID(config), wfapi.OutcomeReleased))
}

// startChecker starts an invariant checker for the test.
func startChecker(t testing.TB) *Checker {
	t.Helper()
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := NewChecker(ctx, env.RestConfig, env.Scheme, env.Temporal)
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if b, _ := os.ReadFile(filepath.Join(env.Dir, "logs", "temporal.log")); bytes.Contains(b, []byte("interrupted (9)")) {
			t.Log("note: the Temporal dev server's log shows SQLITE_INTERRUPT errors (\"interrupted (9)\"): its SQLite store " +
				"(modernc.org/sqlite v1.34.1) can wedge under heavy load; failures after that are the server's, not the product's")
		}
	})
	return c
}

// requireSound runs the checker and fails the test on any violation.
func requireSound(t testing.TB, c *Checker, scope Scope) Report {
	t.Helper()
	rep := c.Check(context.Background(), scope, settleBound)
	t.Logf("checker: settled=%v after %s; %d switches (%d rolled back), %d releases; %d object states seen, %d after a watch gap",
		rep.Converged, rep.Waited.Round(time.Millisecond), rep.Switches, rep.RolledBack, rep.Releases, rep.Records, rep.Gaps)
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	if err := c.Err(); err != nil {
		t.Errorf("checker: %v", err)
	}
	return rep
}

func prefixed(prefix string) func(string) bool {
	return func(name string) bool { return strings.HasPrefix(name, prefix) }
}

// cleanCluster empties the cluster: configs are cluster-scoped, and a class
// default of one test would move the pools of another.
func cleanCluster(t testing.TB) {
	t.Helper()
	producttest.CleanCluster(t, testenv.Current().Kube)
}

// cleanScope deletes, when the test ends, the pools of its namespaces and
// the configs named with its prefix, stripping the finalizer by hand: for
// tests that run beside others, which must not empty the whole cluster.
func cleanScope(t testing.TB, prefix string, namespaces ...string) {
	t.Cleanup(func() {
		c := testenv.Current().Kube
		ctx := context.Background()
		for _, ns := range namespaces {
			_ = c.DeleteAllOf(ctx, &v1alpha1.WorkerPool{}, client.InNamespace(ns))
		}
		var configs v1alpha1.SandboxConfigList
		if err := c.List(ctx, &configs); err != nil {
			t.Errorf("cleaning up: %v", err)
			return
		}
		for i := range configs.Items {
			cfg := &configs.Items[i]
			if !strings.HasPrefix(cfg.Name, prefix) {
				continue
			}
			if controllerutil.RemoveFinalizer(cfg, v1alpha1.ProtectionFinalizer) {
				_ = client.IgnoreNotFound(c.Update(ctx, cfg))
			}
			_ = client.IgnoreNotFound(c.Delete(ctx, cfg))
		}
	})
}

// isolate empties the cluster before and after the test.
func isolate(t testing.TB) {
	t.Helper()
	cleanCluster(t)
	t.Cleanup(func() { cleanCluster(t) })
}

// waitReadyPods waits until the pool's status shows want ready replicas
// and exactly want of its pods exist, all Ready and none terminating, and
// returns their UIDs, sorted.
func waitReadyPods(t *testing.T, ns, name string, want int) []string {
	t.Helper()
	var uids []string
	eventually(t, 60*time.Second, fmt.Sprintf("%d Ready pods of %s/%s, mirrored in its status", want, ns, name), func() (bool, string) {
		var pods corev1.PodList
		require.NoError(t, testenv.Current().Kube.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{v1alpha1.WorkerPoolLabel: name}))
		uids = uids[:0]
		ready := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			uids = append(uids, string(p.UID))
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		wp := getPool(t, ns, name)
		return len(pods.Items) == want && ready == want && wp.Status.ReadyReplicas == int32(want),
			fmt.Sprintf("%d pods, %d Ready; the pool's status shows %d ready", len(pods.Items), ready, wp.Status.ReadyReplicas)
	})
	slices.Sort(uids)
	return uids
}
