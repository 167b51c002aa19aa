//go:build record

package replay

// The product, run in this process against the recorder's servers, and the
// helpers the scenarios drive it with: a small copy of internal/e2e's, which
// is a _test package and cannot be imported.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/starterapp"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/internal/workerapp"
)

var quietLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func init() { ctrl.SetLogger(logr.FromSlogHandler(quietLog.Handler())) }

// product is a worker and a starter on their own task queue.
type product struct {
	kube     client.Client
	temporal tclient.Client
	halt     func()
}

// startProduct runs the worker and the starter against the package's
// kube-apiserver and the given Temporal server until the test ends, then
// empties the cluster: SandboxConfigs are cluster-scoped, and one
// scenario's class default would move another's pools.
func startProduct(t *testing.T, temporal tclient.Client, interceptors ...interceptor.WorkerInterceptor) *product {
	t.Helper()
	env := testenv.Current()
	p := &product{kube: env.Kube, temporal: temporal}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	tq := testenv.TaskQueue(t)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs <- workerapp.Run(ctx, workerapp.Config{Rest: env.RestConfig, Temporal: temporal, TaskQueue: tq, Log: quietLog,
			Worker: worker.Options{Interceptors: interceptors}})
	}()
	go func() {
		defer wg.Done()
		errs <- starterapp.Run(ctx, starterapp.Config{Rest: env.RestConfig, Temporal: temporal, TaskQueue: tq, SkipNameValidation: true})
	}()
	t.Cleanup(func() {
		cleanCluster(t, env.Kube)
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("product stopped with an error: %v", err)
			}
		}
	})
	return p
}

func cleanCluster(t *testing.T, c client.Client) {
	ctx := context.Background()
	var pools v1alpha1.WorkerPoolList
	require.NoError(t, c.List(ctx, &pools))
	for i := range pools.Items {
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, &pools.Items[i])))
	}
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, c.List(ctx, &configs))
	for i := range configs.Items {
		cfg := &configs.Items[i]
		if controllerutil.RemoveFinalizer(cfg, v1alpha1.ProtectionFinalizer) {
			require.NoError(t, client.IgnoreNotFound(c.Update(ctx, cfg)))
		}
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, cfg)))
	}
	eventually(t, "the cluster to be empty", func() (bool, string) {
		var pools v1alpha1.WorkerPoolList
		var configs v1alpha1.SandboxConfigList
		if err := c.List(ctx, &pools); err != nil {
			return false, err.Error()
		}
		if err := c.List(ctx, &configs); err != nil {
			return false, err.Error()
		}
		return len(pools.Items) == 0 && len(configs.Items) == 0, fmt.Sprintf("%d pools, %d configs", len(pools.Items), len(configs.Items))
	})
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
}

func gvisorConfig(name string, classDefault bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   v1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@sha256:" + strings.Repeat("a", 64),
			}},
		},
	}
	if classDefault {
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
	}
	return c
}

func pool(ns, name, configRef string) *v1alpha1.WorkerPool {
	replicas := int32(0)
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       &replicas,
			WorkerImage:    "ateworker-gvisor:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
		},
	}
	if configRef != "" {
		p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: configRef}
	}
	return p
}

// createAfterOthers creates a config a whole second after every existing
// one: creation timestamps have one-second resolution, and "newest class
// default" must not fall back to the name tie-break.
func (p *product) createAfterOthers(t *testing.T, c *v1alpha1.SandboxConfig) {
	t.Helper()
	ctx := context.Background()
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, p.kube.List(ctx, &configs))
	var newest time.Time
	for _, existing := range configs.Items {
		if ts := existing.CreationTimestamp.Time; ts.After(newest) {
			newest = ts
		}
	}
	for time.Now().Truncate(time.Second).Equal(newest.Truncate(time.Second)) || time.Now().Before(newest) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, p.kube.Create(ctx, c))
}

// waitForConfig polls until the pool's gvisor class names want, with no
// pending claim and the given Resolved status.
func (p *product) waitForConfig(t *testing.T, ns, name, want string, resolved metav1.ConditionStatus) {
	t.Helper()
	eventually(t, fmt.Sprintf("WorkerPool %s/%s on %q with Resolved=%s", ns, name, want, resolved), func() (bool, string) {
		var got v1alpha1.WorkerPool
		if err := p.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false, err.Error()
		}
		st := got.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		if st == nil {
			return false, "no class status"
		}
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		current := ""
		if st.ConfigRef != nil {
			current = st.ConfigRef.Name
		}
		ok := current == want && st.PendingConfigRef == nil && c != nil && c.Status == resolved && c.ObservedGeneration == got.Generation
		return ok, fmt.Sprintf("configRef=%q pending=%v condition=%+v", current, st.PendingConfigRef, c)
	})
}

func (p *product) setDefault(t *testing.T, name string, on bool) {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, p.kube.Get(context.Background(), client.ObjectKey{Name: name}, &c))
	base := c.DeepCopy()
	if on {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, v1alpha1.ClassDefaultAnnotation, "true")
	} else {
		delete(c.Annotations, v1alpha1.ClassDefaultAnnotation)
	}
	require.NoError(t, p.kube.Patch(context.Background(), &c, client.MergeFrom(base)))
}

func (p *product) repin(t *testing.T, ns, name, config string) {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, p.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp))
	base := wp.DeepCopy()
	wp.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: config}
	require.NoError(t, p.kube.Patch(context.Background(), &wp, client.MergeFrom(base)))
}

func (p *product) waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s to be gone", obj.GetName()), func() (bool, string) {
		err := p.kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there: finalizers=%v deleting=%v err=%v", obj.GetFinalizers(), obj.GetDeletionTimestamp() != nil, err)
	})
}

// waitForRelease polls the visibility store until the release workflow of a
// config reports an outcome.
func (p *product) waitForRelease(t *testing.T, config, outcome string) {
	t.Helper()
	query := fmt.Sprintf("WorkflowId = %q AND Outcome = %q", wfapi.ReleaseWorkflowID(config), outcome)
	eventually(t, "release workflow of "+config+" "+outcome, func() (bool, string) {
		resp, err := p.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) > 0, fmt.Sprintf("%d executions match %s", len(resp.Executions), query)
	})
}

// describe returns the run ID and status of a workflow's run (the current
// run when runID is empty).
func (p *product) describe(t *testing.T, id, runID string) (string, enumspb.WorkflowExecutionStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.temporal.DescribeWorkflowExecution(ctx, id, runID)
	require.NoError(t, err, "describing %s", id)
	info := resp.GetWorkflowExecutionInfo()
	return info.GetExecution().GetRunId(), info.GetStatus()
}

// history fetches the whole history of one run, as GetWorkflowHistory pages it.
func (p *product) history(t *testing.T, id, runID string) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := p.temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err, "reading the history of %s", id)
		h.Events = append(h.Events, e)
	}
	return h
}

// closedHistory waits for the current run of a workflow to close and
// returns its history.
func (p *product) closedHistory(t *testing.T, id string) *historypb.History {
	t.Helper()
	run := ""
	eventually(t, id+" to close", func() (bool, string) {
		r, status := p.describe(t, id, "")
		run = r
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status.String()
	})
	return p.history(t, id, run)
}

// openHistory returns the history of a workflow's current run while it
// runs, once it is at rest: no workflow task in flight and nothing added
// for a second. That is the history a new worker replays when it picks the
// workflow up.
func (p *product) openHistory(t *testing.T, id string) *historypb.History {
	t.Helper()
	var h *historypb.History
	run, same := "", 0
	eventually(t, id+" to be at rest", func() (bool, string) {
		r, status := p.describe(t, id, run)
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("%s is %s, not running", id, status)
		}
		run = r
		next := p.history(t, id, run)
		last := lastEvent(next).GetEventType()
		if h != nil && len(next.Events) == len(h.Events) && last != enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED &&
			last != enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			same++
		} else {
			same = 0
		}
		h = next
		time.Sleep(200 * time.Millisecond)
		return same >= 5, fmt.Sprintf("%d events, last %s", len(h.Events), last)
	})
	return h
}

// gate holds the first run of one activity with one argument until the
// scenario opens it (as internal/e2e's gate does), so that a history can be
// exported mid-switch and a config deleted between a claim and a read.
type gate struct {
	interceptor.WorkerInterceptorBase
	activity, arg string
	reached, open chan struct{}
	once, opened  sync.Once
}

func newGate(activity, arg string) *gate {
	return &gate{activity: activity, arg: arg, reached: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &gatedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, gate: g}
}

type gatedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	gate *gate
}

func (a *gatedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	g := a.gate
	if activity.GetInfo(ctx).ActivityType.Name == g.activity && len(in.Args) > 0 && fmt.Sprint(in.Args[0]) == g.arg {
		first := false
		g.once.Do(func() { first = true; close(g.reached) })
		if first {
			<-g.open
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}

func (g *gate) waitReached(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("activity %s(%s) never ran", g.activity, g.arg)
	}
}

// release opens the gate; it may be called more than once.
func (g *gate) release() { g.opened.Do(func() { close(g.open) }) }
