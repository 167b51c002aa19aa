// Package producttest runs the product (the worker and the starter, in this
// process) against the real servers of internal/testenv, and offers what
// tests need to drive it as a user does: fixtures, polls with deadlines for
// the states a pool goes through, its events and its release workflows, and
// a Gate that holds an activity at an exact point of a workflow. The e2e
// tests, the replay recorder and the benchmarks share it.
package producttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/leader"
	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/tracing"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
	ateworker "ate.dev/orchestrator/worker"
)

// Product is a worker and a starter on their own task queue (TaskQueue; empty:
// the cluster's default one), run in this process.
type Product struct {
	Env       *testenv.Env
	TaskQueue string
	// ClusterName, when set, is the worker's and the starter's
	// --cluster-name (default: none, the API server's identity).
	ClusterName  wfapi.Cluster
	Clientset    kubernetes.Interface
	Interceptors []interceptor.WorkerInterceptor
	halt         func() // stops the processes; nil while stopped

	// Optional: the Temporal client of both processes (default Env.Temporal:
	// set it to reach another server, or to record metrics) and the
	// starter's metrics address (default none), served as starter.Main
	// serves it: controller-runtime's registry, from the first Start until
	// the test ends.
	Temporal           tclient.Client
	StarterMetricsAddr string
	metricsServed      bool
	// NoStarter makes Start run the worker alone: a test then plays the
	// starter, or an operator, by hand.
	NoStarter bool
	// Optional: the worker's and the starter's API server identities
	// (default Env.RestConfig, an admin), e.g. impersonating their
	// ServiceAccounts, and the namespace of their leader election Leases
	// (default: no leader election).
	WorkerRest, StarterRest *rest.Config
	LeaderElectionNamespace string
	// Tracing, when set, runs both processes traced as they run with
	// OTEL_* set (see the worker's and the starter's Main): a Temporal
	// client of their own with the tracing interceptors, the worker's
	// options with its own, and their API server clients traced.
	Tracing *tracing.Tracing
	// RolloutStepDeadline is the worker's step deadline of staged
	// rollouts (default: the worker's).
	RolloutStepDeadline time.Duration
	// Metrics is the worker's Prometheus, for rollouts' analyses
	// (default: none).
	Metrics activities.Querier
	// RolloutAfterPoll is how often the worker's rollouts waiting for other
	// clusters read them again (default: the worker's).
	RolloutAfterPoll time.Duration
}

// QuietLog logs warnings and errors only, so test output stays readable.
var QuietLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func init() { ctrl.SetLogger(logr.FromSlogHandler(QuietLog.Handler())) }

// Run runs the worker and the starter until the test ends, and then
// removes every pool and config the test left behind, so the next test
// starts from an empty cluster: SandboxConfigs are cluster-scoped, and a
// class default of one test would move the pools of another.
func Run(t testing.TB, interceptors ...interceptor.WorkerInterceptor) *Product {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := &Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Interceptors: interceptors}
	return p.Run(t)
}

// Run starts a Product set up by hand and arranges its cleanup.
func (p *Product) Run(t testing.TB) *Product {
	t.Helper()
	env := p.Env
	p.Start(t)
	t.Cleanup(func() {
		if p.halt == nil {
			p.Start(t) // release what the test left, so the cluster can be emptied
		}
		CleanCluster(t, env.Kube)
		p.Stop(t)
		p.TerminateWorkflows(t)
	})
	return p
}

// TerminateWorkflows ends the workflows this test's Product left running
// (the operator workflow, release workflows waiting on a timer): their IDs are
// derived from object names, and a later test reusing a name must not
// signal a workflow on this test's task queue, which no worker polls.
func (p *Product) TerminateWorkflows(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	query := fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", p.Scope().TaskQueue)
	resp, err := p.TemporalClient().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err)
	for _, e := range resp.Executions {
		err := p.TemporalClient().TerminateWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId, "test finished")
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			t.Errorf("terminating %s: %v", e.Execution.WorkflowId, err)
		}
	}
}

// TemporalClient is the Temporal client the product runs with.
func (p *Product) TemporalClient() tclient.Client { return cmp.Or(p.Temporal, p.Env.Temporal) }

// Start runs the worker and the starter.
func (p *Product) Start(t testing.TB) {
	t.Helper()
	require.Nil(t, p.halt, "already running")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	workerRest, starterRest := cmp.Or(p.WorkerRest, p.Env.RestConfig), cmp.Or(p.StarterRest, p.Env.RestConfig)
	if p.StarterMetricsAddr != "" && !p.metricsServed {
		p.metricsServed = true
		mctx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		require.NoError(t, probes.ServeMetrics(mctx, probes.Metrics{BindAddress: p.StarterMetricsAddr}, nil, QuietLog))
	}
	wopts := worker.Options{Interceptors: p.Interceptors}
	if p.Tracing != nil {
		workerRest, starterRest = rest.CopyConfig(workerRest), rest.CopyConfig(starterRest)
		copts := p.Env.TemporalClientOptions()
		p.Tracing.Install(workerRest, &copts)
		p.Tracing.WrapREST(starterRest) // both run on the one client below
		if p.Temporal == nil {
			c, err := tclient.DialContext(context.Background(), copts)
			require.NoError(t, err)
			t.Cleanup(c.Close)
			p.Temporal = c
		}
		wopts = ateworker.TemporalWorkerOptionsWith(p.Tracing)
		wopts.Interceptors = append(wopts.Interceptors, p.Interceptors...)
	}
	elect := leader.Election{Enabled: p.LeaderElectionNamespace != "", Namespace: p.LeaderElectionNamespace}
	go func() {
		defer wg.Done()
		errs <- ateworker.Run(ctx, ateworker.Config{Rest: workerRest, Temporal: p.TemporalClient(), ClusterName: string(p.ClusterName), TaskQueue: p.TaskQueue, Log: QuietLog, SkipNameValidation: true,
			Worker:              wopts,
			RolloutStepDeadline: p.RolloutStepDeadline,
			Metrics:             p.Metrics,
			RolloutAfterPoll:    p.RolloutAfterPoll,
			LeaderElection:      elect})
	}()
	go func() {
		defer wg.Done()
		if p.NoStarter {
			<-ctx.Done()
			return
		}
		errs <- starter.Run(ctx, starter.Config{Rest: starterRest, Temporal: p.TemporalClient(), ClusterName: string(p.ClusterName), TaskQueue: p.TaskQueue,
			SkipNameValidation: true,
			LeaderElection:     elect})
	}()
	p.halt = func() {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Product stopped with an error: %v", err)
			}
		}
	}
}

// Stop stops the worker and the starter, as a shutdown of the Product does.
func (p *Product) Stop(t testing.TB) {
	t.Helper()
	if p.halt != nil {
		p.halt()
		p.halt = nil
	}
}

// CreateAfterOthers creates a config whose creation timestamp is a whole
// second after every existing config's (see the package function).
func (p *Product) CreateAfterOthers(t testing.TB, c *v1alpha1.SandboxConfig) {
	t.Helper()
	CreateAfterOthers(t, p.Env.Kube, c)
}

// WaitForConfig polls until the pool's gvisor class names want in configRef,
// with no pending claim and the given Resolved status.
func (p *Product) WaitForConfig(t testing.TB, ns, name, want string, resolved metav1.ConditionStatus) *v1alpha1.WorkerPool {
	t.Helper()
	var got v1alpha1.WorkerPool
	Eventually(t, fmt.Sprintf("WorkerPool %s/%s on %q with Resolved=%s", ns, name, want, resolved), func() (bool, string) {
		if err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false, err.Error()
		}
		st := got.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		if st == nil {
			return false, "no class status"
		}
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		ok := RefName(st.ConfigRef) == want && st.PendingConfigRef == nil && c != nil && c.Status == resolved &&
			c.ObservedGeneration == got.Generation
		return ok, fmt.Sprintf("configRef=%q pending=%q condition=%+v", RefName(st.ConfigRef), RefName(st.PendingConfigRef), c)
	})
	return &got
}

// RefName is the name a reference holds, or "".
func RefName(r *v1alpha1.SandboxConfigReference) string { return r.NameOf() }

// WaitForEvents polls until the pool's events are exactly want: an event is
// recorded just after the status write it reports.
func (p *Product) WaitForEvents(t testing.TB, ns, name string, want []string) {
	t.Helper()
	var got []string
	Eventually(t, fmt.Sprintf("the events of WorkerPool %s/%s", ns, name), func() (bool, string) {
		got = p.Events(t, ns, name)
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// Events returns the pool's events as "Type Reason: note", oldest first.
func (p *Product) Events(t testing.TB, ns, name string) []string {
	t.Helper()
	return PoolEvents(t, p.Clientset, ns, name)
}

func (p *Product) WaitGone(t testing.TB, obj client.Object) {
	t.Helper()
	Eventually(t, fmt.Sprintf("%s to be gone", obj.GetName()), func() (bool, string) {
		err := p.Env.Kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there: finalizers=%v deleting=%v err=%v", obj.GetFinalizers(), obj.GetDeletionTimestamp() != nil, err)
	})
}

// Get reads a pool from the API server.
func (p *Product) Get(t testing.TB, ns, name string) *v1alpha1.WorkerPool {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp))
	return &wp
}
