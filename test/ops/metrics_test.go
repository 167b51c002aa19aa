package ops

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	tworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/deploy/monitoring"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
	"ate.dev/orchestrator/test/crashtest"
	"ate.dev/orchestrator/worker"
)

// TestMonitoringMatchesWhatTheProcessesExport runs the worker and the
// starter as real processes, configured as deployed (leader-elected, each
// serving its own /metrics: plain HTTP on loopback here), makes happen what
// the dashboard and the alerts watch (a switch; a release that waits, then
// ends; a switch step that fails; a workflow task that fails; a start the
// frontend refuses), scrapes both endpoints, and checks:
//   - every metric the dashboard and the rules name is exported;
//   - every exported family has its own HELP text;
//   - the release wait's buckets reach days;
//   - every series carries the cluster.
func TestMonitoringMatchesWhatTheProcessesExport(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	tq := testenv.TaskQueue(t)
	// Leader election as deployed (LEADER_ELECT=true), in a namespace of
	// the test's: the alert ATEStarterNotLeading reads the starter's
	// leader_election_master_status.
	leases := env.Namespace(t)
	workerMetrics, starterMetrics := testenv.FreeAddr(t), testenv.FreeAddr(t)
	runProcess(t, "worker", tq, workerMetrics, leases)
	runProcess(t, "starter", tq, starterMetrics, leases)
	// Its helpers only read the servers: the product is the processes.
	p := &producttest.Product{Env: env, TaskQueue: tq}
	t.Cleanup(func() { // before the processes stop: releases let the configs go
		producttest.CleanCluster(t, env.Kube)
		p.TerminateWorkflows(t)
	})
	kube := env.Kube
	ns := env.Namespace(t)

	// A switch, then a release that waits for the pool.
	held := producttest.GVisorConfig("held", true)
	require.NoError(t, kube.Create(ctx, held))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "watched", "")))
	p.WaitForConfig(t, ns, "watched", "held", metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, held))
	p.WaitForRelease(t, "held", wfapi.OutcomeWaiting)
	// A family exported only while there is something to report (a waiting
	// release) counts as exported: the names of every scrape are kept.
	exported := map[string]bool{}
	producttest.Eventually(t, "the starter to export the waiting release", func() (bool, string) {
		fams, err := scrape(starterMetrics)
		if err != nil {
			return false, err.Error()
		}
		for n := range names(fams) {
			exported[n] = true
		}
		return gauge(fams, "ate_releases_waiting", "") == 1 && gauge(fams, "ate_release_waiting_seconds", "held") > 0,
			fmt.Sprintf("waiting=%v age=%v", gauge(fams, "ate_releases_waiting", ""), gauge(fams, "ate_release_waiting_seconds", "held"))
	})
	// The pool moves on: the release ends.
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("next", false)))
	producttest.Repin(t, kube, ns, "watched", "next")
	p.WaitGone(t, held)

	// A staged rollout, created paused: the starter exports its phase,
	// step and pools from status.rollout.
	p.CreateAfterOthers(t, producttest.RolloutConfig("staged", true, nil, producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "staged", "paused", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutPaused })
	producttest.Eventually(t, "the starter to export the rollout", func() (bool, string) {
		fams, err := scrape(starterMetrics)
		if err != nil {
			return false, err.Error()
		}
		for n := range names(fams) {
			exported[n] = true
		}
		var paused float64 = -1
		for _, m := range fams["ate_rollout_phase"].GetMetric() {
			if labelValue(m, "sandbox_config") == "staged" && labelValue(m, "phase") == "Paused" {
				paused = m.GetGauge().GetValue()
			}
		}
		return paused == 1 && gauge(fams, "ate_rollout_step", "staged") == 0,
			fmt.Sprintf("phase Paused=%v step=%v", paused, gauge(fams, "ate_rollout_step", "staged"))
	})

	// Failures, started by hand as a mistaken operator would: a switch
	// whose local step fails (a class the pool's spec lacks: its RollBack
	// is refused), one whose workflow ID names no pool (it fails before
	// any step), and a workflow type no worker knows (its workflow task
	// fails until it is terminated). They run under the pool's switch ID
	// (a switch acts only on the pool its ID names), one after the other.
	watched := p.Get(t, ns, "watched")
	ref := wfapi.PoolRef{Namespace: ns, Name: "watched", UID: string(watched.UID)}
	for _, tc := range []struct {
		id string
		in wfapi.SwitchInput
	}{
		{testenv.Current().ClusterName.SwitchWorkflowID(ns, "watched"), wfapi.SwitchInput{Pool: ref, Class: v1alpha1.SandboxClassMicroVM, From: "next", To: "next"}},
		{"not-a-switch-id", wfapi.SwitchInput{Pool: ref, Class: v1alpha1.SandboxClassGVisor, To: "next"}},
	} {
		run, err := p.TemporalClient().ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{ID: tc.id, TaskQueue: p.TaskQueue}, wfapi.SwitchWorkflow, tc.in)
		require.NoError(t, err)
		require.Error(t, run.Get(ctx, nil), "switch %s", tc.id)
	}
	// A regular activity that fails: a workflow of the test's own, on a
	// queue of its own, schedules the product's RecordEvent for a pool its
	// ID (of its cluster, so that the cluster guard lets it through) does not
	// name; the activity refuses it (the caller check), so the
	// product's worker counts an activity execution failure.
	queue := p.TaskQueue + "-misdirected"
	mw := tworker.New(p.TemporalClient(), queue, tworker.Options{})
	mw.RegisterWorkflowWithOptions(misdirectedEvent, workflow.RegisterOptions{Name: "MisdirectedEvent"})
	require.NoError(t, mw.Start())
	t.Cleanup(mw.Stop)
	misdirected, err := p.TemporalClient().ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{ID: p.Cluster().SwitchWorkflowID(ns, "misdirected"), TaskQueue: queue},
		"MisdirectedEvent", p.TaskQueue, events.PoolEvent{Pool: ref, Type: "Normal", Reason: v1alpha1.EventReasonSandboxConfigSwitched,
			Action: "Switch", Note: "not from a switch", Key: "misdirected"})
	require.NoError(t, err)
	require.Error(t, misdirected.Get(ctx, nil), "RecordEvent for a pool the caller's ID does not name")

	// A workflow type no worker knows, started under the pool's switch ID:
	// its workflow task fails until it is terminated, and while it runs
	// the frontend refuses the starter's start of the pool's next switch,
	// as when a switch of the pool runs.
	unknown, err := p.TemporalClient().ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{ID: p.Cluster().SwitchWorkflowID(ns, "watched"), TaskQueue: p.TaskQueue},
		"NoSuchWorkflow")
	require.NoError(t, err)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("after", false)))
	producttest.Repin(t, kube, ns, "watched", "after")
	producttest.Eventually(t, "the starter's refused start", func() (bool, string) {
		fams, err := scrape(starterMetrics)
		if err != nil {
			return false, err.Error()
		}
		n := counter(fams, "temporal_request_failure_total")
		return n > 0, fmt.Sprintf("temporal_request_failure_total %v", n)
	})
	require.NoError(t, p.TemporalClient().TerminateWorkflow(ctx, unknown.GetID(), unknown.GetRunID(), "the test's stand-in for a running switch"))
	p.WaitForConfig(t, ns, "watched", "after", metav1.ConditionTrue)

	used, err := monitoring.MetricNames()
	require.NoError(t, err)
	var fams map[string]*dto.MetricFamily
	producttest.Eventually(t, "every metric of the dashboard and the alerts exported", func() (bool, string) {
		if fams, err = scrapeAll(workerMetrics, starterMetrics); err != nil {
			return false, err.Error()
		}
		for n := range names(fams) {
			exported[n] = true
		}
		var missing []string
		for name, where := range used {
			if !exported[name] {
				missing = append(missing, fmt.Sprintf("%s (%s)", name, strings.Join(where, ", ")))
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, "not exported: " + strings.Join(missing, "; ")
	})
	// The failures above are what made some of them exist.
	require.Positive(t, counter(fams, "temporal_workflow_task_execution_failed_total"))
	require.Positive(t, counter(fams, "temporal_activity_execution_failed_total"))
	require.Positive(t, counter(fams, "temporal_local_activity_execution_failed_total"))

	// deploy/monitoring scopes the SDK's metrics by ate_process; the SDK's
	// Temporal namespace is exported as temporal_namespace, never as the
	// namespace label a Kubernetes scrape adds.
	t.Run("the SDK's series carry ate_process and temporal_namespace", func(t *testing.T) {
		for role, addr := range map[string]string{"worker": workerMetrics, "starter": starterMetrics} {
			own, err := scrape(addr)
			require.NoError(t, err)
			polled := false
			for name, f := range own {
				if !strings.HasPrefix(name, "temporal_") {
					continue
				}
				for _, m := range f.GetMetric() {
					l := map[string]string{}
					for _, lp := range m.GetLabel() {
						l[lp.GetName()] = lp.GetValue()
					}
					require.Equal(t, role, l[metrics.ProcessLabel], "%s: %s %v", role, name, l)
					require.NotContains(t, l, "namespace", "%s: %s %v", role, name, l)
					if name == "temporal_workflow_task_queue_poll_succeed_total" {
						require.Equal(t, env.TemporalNamespace, l["temporal_namespace"], "%s: %s %v", role, name, l)
						polled = true
					}
				}
			}
			if role == "worker" {
				require.True(t, polled, "the worker exports temporal_workflow_task_queue_poll_succeed_total")
			}
		}
	})
	// A fleet's Prometheus keeps the clusters apart by the cluster label
	// each process puts on every series it serves: the product's own, the
	// SDK's and the libraries' (the leader election's, which
	// ATEStarterNotLeading groups by it).
	t.Run("every series carries the cluster", func(t *testing.T) {
		for role, addr := range map[string]string{"worker": workerMetrics, "starter": starterMetrics} {
			own, err := scrape(addr)
			require.NoError(t, err)
			var checked int
			for name, f := range own {
				for _, m := range f.GetMetric() {
					require.Equal(t, string(env.ClusterName), labelValue(m, metrics.DefaultClusterLabel), "%s: %s %v", role, name, m.GetLabel())
					if strings.HasPrefix(name, "ate_") || strings.HasPrefix(name, "temporal_") {
						checked++
					}
				}
			}
			require.Positive(t, checked, "%s exports ate_* or temporal_* series", role)
		}
	})
	t.Run("the leading starter and worker say so", func(t *testing.T) {
		for _, lease := range []string{starter.LeaseName, worker.LeaseName} {
			require.Equal(t, 1.0, gaugeWith(fams, "leader_election_master_status", "name", lease), lease)
		}
	})
	t.Run("every family has its own HELP", func(t *testing.T) {
		seen := map[string]string{}
		for name, f := range fams {
			help := f.GetHelp()
			require.NotEmpty(t, help, name)
			require.NotContains(t, help, "not documented", "%s: add its HELP to internal/metrics/help.go", name)
			if strings.HasPrefix(name, "ate_") || strings.HasPrefix(name, "temporal_") {
				require.NotContains(t, seen, help, "%s shares its HELP with %s", name, seen[help])
				seen[help] = name
			}
		}
	})
	t.Run("release wait buckets reach days", func(t *testing.T) {
		f := fams["ate_release_wait_seconds"]
		require.NotNil(t, f, "ate_release_wait_seconds not exported")
		require.Equal(t, dto.MetricType_HISTOGRAM, f.GetType())
		var top float64
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			top = max(top, b.GetUpperBound())
		}
		require.GreaterOrEqual(t, top, 7*86400.0, "the largest finite bucket")
	})
	t.Run("the worker's pool reconciler is in controller-runtime's metrics", func(t *testing.T) {
		require.Positive(t, counterWith(fams, "controller_runtime_reconcile_total", "controller", "pool-keeper"))
		require.Contains(t, fams, "workqueue_depth")
		require.Contains(t, fams, "rest_client_requests_total")
	})
}

// scrapeAll scrapes each address and merges what they export: a family
// both export (the Go runtime's, controller-runtime's, the leader
// election's) has the series of both.
func scrapeAll(addrs ...string) (map[string]*dto.MetricFamily, error) {
	out := map[string]*dto.MetricFamily{}
	for _, addr := range addrs {
		fams, err := scrape(addr)
		if err != nil {
			return nil, err
		}
		for name, f := range fams {
			if have, ok := out[name]; ok {
				have.Metric = append(have.Metric, f.GetMetric()...)
			} else {
				out[name] = f
			}
		}
	}
	return out, nil
}

// runProcess runs the worker or the starter, the real program, on the task
// queue until the test ends, leader-elected with its Lease in leases and
// serving /metrics on addr in plain HTTP.
func runProcess(t *testing.T, role, taskQueue, addr, leases string) *crashtest.Process {
	t.Helper()
	env := testenv.Current()
	worker, starter := bins.Paths(t, 10*time.Minute)
	bin := map[string]string{"worker": worker, "starter": starter}[role]
	vars := append(crashtest.HostEnv("TEMPORAL_", "ATE_", "KUBECONFIG=", "LEADER_", "OTEL_", "METRICS_", "HEALTH_"),
		"KUBECONFIG="+env.KubeconfigPath,
		"TEMPORAL_ADDRESS="+env.TemporalAddress,
		"TEMPORAL_NAMESPACE="+env.TemporalNamespace,
		"TEMPORAL_TASK_QUEUE="+taskQueue,
		"METRICS_BIND_ADDRESS="+addr,
		"METRICS_SECURE=false",
		"HEALTH_PROBE_BIND_ADDRESS=0",
		"LEADER_ELECT=true",
		"LEADER_ELECTION_NAMESPACE="+leases,
	)
	p := crashtest.NewProcess(t, role, bin, vars, filepath.Join(env.Dir, "ops", testenv.UniqueName(t)))
	p.Start()
	return p
}

// scrape reads /metrics as Prometheus does.
func scrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// names are the series names a query can select: a histogram's
// _bucket, _sum and _count, the others' own.
func names(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for name, f := range fams {
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = true
			}
		}
	}
	return out
}

// gauge is the value of a gauge's series whose sandbox_config label is
// config ("" for a family without labels), or -1.
func gauge(fams map[string]*dto.MetricFamily, name, config string) float64 {
	for _, m := range fams[name].GetMetric() {
		if labelValue(m, "sandbox_config") == config {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// gaugeWith is the value of a gauge's series whose label is value, or -1.
func gaugeWith(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	for _, m := range fams[name].GetMetric() {
		if labelValue(m, label) == value {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

func counter(fams map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func counterWith(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		if labelValue(m, label) == value {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// misdirectedEvent schedules the product's RecordEvent activity once, on the
// product's task queue, from a workflow whose ID names no switch.
func misdirectedEvent(ctx workflow.Context, productQueue string, ev events.PoolEvent) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: productQueue, StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteActivity(ctx, "RecordEvent", ev).Get(ctx, nil)
}
