package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/starterapp"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/workerapp"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{})) }

// product is a worker and a starter on their own task queue, run in this
// process.
type product struct {
	env          *testenv.Env
	taskQueue    string
	clientset    kubernetes.Interface
	interceptors []interceptor.WorkerInterceptor
	halt         func() // stops the processes; nil while stopped

	// Optional: a Temporal client for the worker (default env.Temporal) and
	// the starter's metrics address (default none).
	workerTemporal     tclient.Client
	starterMetricsAddr string
}

var quietLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func init() { ctrl.SetLogger(logr.FromSlogHandler(quietLog.Handler())) }

// startProduct runs the worker and the starter until the test ends, and then
// removes every pool and config the test left behind, so the next test
// starts from an empty cluster: SandboxConfigs are cluster-scoped, and a
// class default of one test would move the pools of another.
func startProduct(t *testing.T, interceptors ...interceptor.WorkerInterceptor) *product {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := &product{env: env, taskQueue: testenv.TaskQueue(t), clientset: cs, interceptors: interceptors}
	return p.run(t)
}

// run starts a product set up by hand and arranges its cleanup.
func (p *product) run(t *testing.T) *product {
	t.Helper()
	env := p.env
	p.start(t)
	t.Cleanup(func() {
		if p.halt == nil {
			p.start(t) // release what the test left, so the cluster can be emptied
		}
		cleanCluster(t, env.Kube)
		p.stop(t)
		p.terminateWorkflows(t)
	})
	return p
}

// terminateWorkflows ends the workflows this test's product left running
// (pool workflows, release workflows waiting on a timer): their IDs are
// derived from object names, and a later test reusing a name must not
// signal a workflow on this test's task queue, which no worker polls.
func (p *product) terminateWorkflows(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	query := fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", p.taskQueue)
	resp, err := p.env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err)
	for _, e := range resp.Executions {
		err := p.env.Temporal.TerminateWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId, "test finished")
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			t.Errorf("terminating %s: %v", e.Execution.WorkflowId, err)
		}
	}
}

// start runs the worker and the starter.
func (p *product) start(t *testing.T) {
	t.Helper()
	require.Nil(t, p.halt, "already running")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	workerTemporal := p.workerTemporal
	if workerTemporal == nil {
		workerTemporal = p.env.Temporal
	}
	go func() {
		defer wg.Done()
		errs <- workerapp.Run(ctx, workerapp.Config{Rest: p.env.RestConfig, Temporal: workerTemporal, TaskQueue: p.taskQueue, Log: quietLog,
			Worker: worker.Options{Interceptors: p.interceptors}})
	}()
	go func() {
		defer wg.Done()
		errs <- starterapp.Run(ctx, starterapp.Config{Rest: p.env.RestConfig, Temporal: p.env.Temporal, TaskQueue: p.taskQueue,
			SkipNameValidation: true, MetricsBindAddress: p.starterMetricsAddr})
	}()
	p.halt = func() {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("product stopped with an error: %v", err)
			}
		}
	}
}

// stop stops the worker and the starter, as a shutdown of the product does.
func (p *product) stop(t *testing.T) {
	t.Helper()
	if p.halt != nil {
		p.halt()
		p.halt = nil
	}
}

// cleanCluster deletes every WorkerPool and SandboxConfig, stripping the
// protection finalizer the product no longer runs to release.
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

// eventually polls cond until it holds or a deadline passes.
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

func microvmConfig(name string) *v1alpha1.SandboxConfig {
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass: v1alpha1.SandboxClassMicroVM, DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{Name: "v1"}},
		},
	}
}

func pool(ns, name, configRef string) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       ptr(int32(0)),
			WorkerImage:    "ateworker-gvisor:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
		},
	}
	if configRef != "" {
		p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: configRef}
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// createAfterOthers creates a config whose creation timestamp is a whole
// second after every existing config's: timestamps have one-second
// resolution, and "newest default" must not fall back to the name tie-break.
func (p *product) createAfterOthers(t *testing.T, c *v1alpha1.SandboxConfig) {
	t.Helper()
	ctx := context.Background()
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, p.env.Kube.List(ctx, &configs))
	var newest time.Time
	for _, existing := range configs.Items {
		if ts := existing.CreationTimestamp.Time; ts.After(newest) {
			newest = ts
		}
	}
	for time.Now().Truncate(time.Second).Equal(newest.Truncate(time.Second)) || time.Now().Before(newest) {
		time.Sleep(20 * time.Millisecond) // a clock boundary, not synchronisation
	}
	require.NoError(t, p.env.Kube.Create(ctx, c))
}

// classStatus polls until the pool's gvisor class names want in configRef,
// with no pending claim and the given Resolved status.
func (p *product) waitForConfig(t *testing.T, ns, name, want string, resolved metav1.ConditionStatus) *v1alpha1.WorkerPool {
	t.Helper()
	var got v1alpha1.WorkerPool
	eventually(t, fmt.Sprintf("WorkerPool %s/%s on %q with Resolved=%s", ns, name, want, resolved), func() (bool, string) {
		if err := p.env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false, err.Error()
		}
		st := got.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		if st == nil {
			return false, "no class status"
		}
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		ok := refName(st.ConfigRef) == want && st.PendingConfigRef == nil && c != nil && c.Status == resolved &&
			c.ObservedGeneration == got.Generation
		return ok, fmt.Sprintf("configRef=%q pending=%q condition=%+v", refName(st.ConfigRef), refName(st.PendingConfigRef), c)
	})
	return &got
}

func refName(r *v1alpha1.SandboxConfigReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}

// waitForEvents polls until the pool's events are exactly want: an event is
// recorded just after the status write it reports.
func (p *product) waitForEvents(t *testing.T, ns, name string, want []string) {
	t.Helper()
	var got []string
	eventually(t, fmt.Sprintf("the events of WorkerPool %s/%s", ns, name), func() (bool, string) {
		got = p.events(t, ns, name)
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// events returns the pool's events as "Type Reason: note", oldest first.
func (p *product) events(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := p.clientset.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var evs []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "WorkerPool" && ev.Regarding.Name == name {
			evs = append(evs, ev)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
	notes := make([]string, len(evs))
	for i, ev := range evs {
		notes[i] = ev.Type + " " + ev.Reason + ": " + ev.Note
	}
	return notes
}

func (p *product) waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s to be gone", obj.GetName()), func() (bool, string) {
		err := p.env.Kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there: finalizers=%v deleting=%v err=%v", obj.GetFinalizers(), obj.GetDeletionTimestamp() != nil, err)
	})
}
