package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// Every series a ClusterRegistry gathers carries the cluster once it is
// named, whoever registered its metric: a plain vector, a collector read at
// scrape time (as the starter's rollout gauges are), the SDK handler's
// series. A series with the label already keeps its value.
func TestClusterRegistryLabelsEverySeries(t *testing.T) {
	inner := prometheus.NewRegistry()
	reg, err := NewClusterRegistry(inner, inner, "cluster")
	require.NoError(t, err)

	signals := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ate_test_signals_total", Help: "Signals."}, []string{"kind"})
	reg.MustRegister(signals)
	signals.WithLabelValues("switch").Inc()
	phase := prometheus.NewDesc("ate_test_phase", "Phase.", []string{"sandbox_config", "phase"}, nil)
	reg.MustRegister(collectorFunc(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(phase, prometheus.GaugeValue, 1, "new", "Halted")
	}))
	h, err := ForProcess(reg, "worker")
	require.NoError(t, err)
	h.Counter("temporal_workflow_task_queue_poll_empty").Inc(1)
	h.WithTags(map[string]string{"cluster": "the-workflows"}).Counter("ate_test_switches").Inc(1)

	const before = `
# HELP ate_test_signals_total Signals.
# TYPE ate_test_signals_total counter
ate_test_signals_total{kind="switch"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(before), "ate_test_signals_total"),
		"unlabelled until the cluster is named")

	reg.SetCluster("prod-eu-1")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ate_test_signals_total Signals.
# TYPE ate_test_signals_total counter
ate_test_signals_total{cluster="prod-eu-1",kind="switch"} 1
# HELP ate_test_phase Phase.
# TYPE ate_test_phase gauge
ate_test_phase{cluster="prod-eu-1",phase="Halted",sandbox_config="new"} 1
# HELP temporal_workflow_task_queue_poll_empty_total Workflow task polls that returned no task (long poll timed out).
# TYPE temporal_workflow_task_queue_poll_empty_total counter
temporal_workflow_task_queue_poll_empty_total{ate_process="worker",cluster="prod-eu-1"} 1
# HELP ate_test_switches_total Temporal SDK metric not documented by this version of the orchestrator: ate_test_switches_total.
# TYPE ate_test_switches_total counter
ate_test_switches_total{ate_process="worker",cluster="the-workflows"} 1
`), "ate_test_signals_total", "ate_test_phase", "temporal_workflow_task_queue_poll_empty_total", "ate_test_switches_total"))
}

type collectorFunc func(chan<- prometheus.Metric)

func (collectorFunc) Describe(chan<- *prometheus.Desc)      {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func TestValidateLabelName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"cluster", true},
		{"kubernetes_cluster", true},
		{"k8s_cluster", true},
		{"", false},
		{"cluster-name", false},
		{"1cluster", false},
		{"__cluster", false},
	} {
		err := ValidateLabelName(tc.name)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.Error(t, err, tc.name)
		}
	}
}
