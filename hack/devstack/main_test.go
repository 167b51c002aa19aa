package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/promquery"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// The Temporal server a second local cluster joins, as `make dev-cluster-2`
// joins the first `make dev` stack's.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoKube: true})) }

// TestJoinExistingTemporal runs devstack as `make dev-cluster-2` does, in
// join mode against testenv's Temporal server and a Prometheus the test
// runs (as the first stack's), on free ports, the bare API server
// (-cluster=false): it starts no Temporal server and no Prometheus, its
// worker and starter (built and run as processes) resolve the sample pool,
// the pool's switch is named after the cluster and runs on the cluster's
// own task queue, the joined Prometheus scrapes the worker and the starter
// while they run and the worker queries it, and stopping the stack leaves
// the joined servers running and their targets gone.
func TestJoinExistingTemporal(t *testing.T) {
	env := testenv.Current()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	promBin, err := servers.PrometheusBinary()
	require.NoError(t, err)
	prom, err := servers.NewPrometheus(servers.PrometheusConfig{Binary: promBin, Dir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, prom.Start(context.Background()))
	t.Cleanup(func() { _ = prom.Stop() })
	const cluster = wfapi.Cluster("local-2")
	s := &stack{
		cfg: config{
			stateDir:          t.TempDir(),
			prometheusURL:     prom.URL(),
			prometheusTargets: prom.TargetsDir(),
			temporalAddress:   env.TemporalAddress,
			namespace:         env.TemporalNamespace,
			clusterName:       string(cluster),
			temporalStack:     "dev",
			cluster:           false,
			crds:              filepath.Join(root, "deploy", "crds"),
			samples:           filepath.Join(root, "deploy", "samples"),
			programPorts:      0,
			kubeBinDir:        os.Getenv("KUBEBUILDER_ASSETS"),
			binDir:            t.TempDir(),
			console:           io.Discard,
		},
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		runErr = s.run(ctx)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-finished:
		case <-time.After(2 * time.Minute):
			t.Fatal("devstack did not stop within 2 minutes of its context's end")
		}
		require.NoError(t, errors.Join(runErr, s.shutdown()), "devstack")
	}
	t.Cleanup(stop)

	// The kubeconfig is written once the API server serves; the programs
	// are built (tens of seconds on a cold cache) after the samples.
	kubeconfig := filepath.Join(s.cfg.stateDir, "kubeconfig")
	var kube client.Client
	producttest.EventuallyWithin(t, 3*time.Minute, "devstack's kubeconfig", func() (bool, string) {
		select {
		case <-finished:
			t.Fatalf("devstack stopped: %v", runErr)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, err.Error()
		}
		if kube, err = client.New(cfg, client.Options{Scheme: servers.NewScheme()}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	var wp v1alpha1.WorkerPool
	producttest.EventuallyWithin(t, 4*time.Minute, "the sample pool ate-demo/counter resolved", func() (bool, string) {
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ate-demo", Name: "counter"}, &wp); err != nil {
			return false, err.Error()
		}
		st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		if st == nil {
			return false, "no class status"
		}
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		return st.ConfigRef.NameOf() == "gvisor-default" && c != nil && c.Status == metav1.ConditionTrue,
			fmt.Sprintf("configRef=%q condition=%+v", st.ConfigRef.NameOf(), c)
	})

	// The switch writes the pool's status before it records the event and
	// completes.
	id := cluster.SwitchWorkflowID("ate-demo", "counter")
	producttest.Eventually(t, "the sample pool's switch "+id+" completed on "+cluster.DefaultTaskQueue(), func() (bool, string) {
		d, err := env.Temporal.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err.Error()
		}
		info := d.WorkflowExecutionInfo
		return info.TaskQueue == cluster.DefaultTaskQueue() && info.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			fmt.Sprintf("task queue %s, %s", info.TaskQueue, info.Status)
	})

	// Both programs scraped by the joined Prometheus, under the cluster's
	// name.
	_, err = prom.WaitForQuery(context.Background(), `up{cluster="local-2"} == 1`, time.Minute, func(s []promquery.Sample) bool { return len(s) == 2 })
	require.NoError(t, err)
	got, err := prom.Client().Query(context.Background(), `count by (job) ({cluster="local-2", __name__!~"up|scrape_.*"})`, time.Time{})
	require.NoError(t, err)
	require.Len(t, got, 2, "the series of both programs' /metrics: %v", got)
	log, err := os.ReadFile(filepath.Join(s.cfg.stateDir, "logs", "worker.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), prom.URL(), "the worker was not given the joined Prometheus")

	stop()
	hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer hcancel()
	_, err = env.Temporal.CheckHealth(hctx, nil)
	require.NoError(t, err, "the joined Temporal server after devstack stopped")
	targets, err := os.ReadDir(prom.TargetsDir())
	require.NoError(t, err)
	require.Empty(t, targets, "devstack left its targets in the joined Prometheus")
	require.True(t, prom.Running(), "the joined Prometheus after devstack stopped")
}
