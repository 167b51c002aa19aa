package starter

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Staged rollouts' progress, read from the starters' caches at scrape time
// as the waiting releases are (waiting.go): status.rollout is the rollout
// workflow's own account, and a gauge recorded by the workflow would stay
// stale on a worker the workflow has left.
var (
	rolloutPhaseDesc = prometheus.NewDesc("ate_rollout_phase",
		"1 for the phase each SandboxConfig's staged rollout is in (status.rollout.phase: Progressing, Paused, Baking, AwaitingApproval, AwaitingClusters, Halted, Aborted, Completed, Superseded, Stopped), by sandbox_config and phase; like every series of the process, labelled with the cluster.",
		[]string{"sandbox_config", "phase"}, nil)
	rolloutStepDesc = prometheus.NewDesc("ate_rollout_step",
		"The step each SandboxConfig's staged rollout is at (status.rollout.step, from 1), by sandbox_config.",
		[]string{"sandbox_config"}, nil)
	rolloutMovedDesc = prometheus.NewDesc("ate_rollout_moved_pools",
		"Unpinned pools of the class on each rolling-out SandboxConfig (status.rollout.movedPools), by sandbox_config.",
		[]string{"sandbox_config"}, nil)
	rolloutTotalDesc = prometheus.NewDesc("ate_rollout_total_pools",
		"Unpinned pools of the class of each rolling-out SandboxConfig (status.rollout.totalPools), by sandbox_config.",
		[]string{"sandbox_config"}, nil)
)

type rolloutCollector struct{}

func init() { ctrlmetrics.Registry.MustRegister(rolloutCollector{}) }

func (rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutPhaseDesc
	ch <- rolloutStepDesc
	ch <- rolloutMovedDesc
	ch <- rolloutTotalDesc
}

// Collect exports each config with a status.rollout once, whichever of
// this process's starters' caches holds it.
func (rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	releasesWaiting.eachConfig(func(c *v1alpha1.SandboxConfig) {
		st := c.Status.Rollout
		if st == nil || st.Phase == "" || seen[c.Name] {
			return
		}
		seen[c.Name] = true
		ch <- prometheus.MustNewConstMetric(rolloutPhaseDesc, prometheus.GaugeValue, 1, c.Name, string(st.Phase))
		ch <- prometheus.MustNewConstMetric(rolloutStepDesc, prometheus.GaugeValue, float64(st.Step), c.Name)
		ch <- prometheus.MustNewConstMetric(rolloutMovedDesc, prometheus.GaugeValue, float64(st.MovedPools), c.Name)
		ch <- prometheus.MustNewConstMetric(rolloutTotalDesc, prometheus.GaugeValue, float64(st.TotalPools), c.Name)
	})
}
