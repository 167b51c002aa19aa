package starter

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/api/v1alpha1"
)

// A release that waits records nothing until it ends (ate_release_wait_seconds),
// so a config held for days would stay invisible. The starter, which
// watches the configs anyway, exports those waiting now, read from its
// cache at scrape time: every replica has a synced cache, leader or not.
var (
	releasesWaitingDesc = prometheus.NewDesc("ate_releases_waiting",
		"SandboxConfigs in deletion that still carry the protection finalizer: releases waiting for the pools that use them to move.",
		nil, nil)
	releaseWaitingDesc = prometheus.NewDesc("ate_release_waiting_seconds",
		"Time since each SandboxConfig still waiting for its release was marked for deletion, by sandbox_config.",
		[]string{"sandbox_config"}, nil)
)

// waiting collects from the caches of the starters running in this
// process (one in production; tests run several, over the same cluster,
// so a config is exported once).
type waiting struct {
	mu      sync.Mutex
	sources map[*ctrlclient.Reader]struct{}
}

var releasesWaiting = &waiting{sources: map[*ctrlclient.Reader]struct{}{}}

func init() { ctrlmetrics.Registry.MustRegister(releasesWaiting) }

// add registers a starter's cache until the returned func is called.
func (w *waiting) add(r ctrlclient.Reader) func() {
	key := &r
	w.mu.Lock()
	w.sources[key] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.sources, key)
		w.mu.Unlock()
	}
}

func (w *waiting) Describe(ch chan<- *prometheus.Desc) {
	ch <- releasesWaitingDesc
	ch <- releaseWaitingDesc
}

func (w *waiting) Collect(ch chan<- prometheus.Metric) {
	since := map[string]time.Time{}
	w.eachConfig(func(c *v1alpha1.SandboxConfig) {
		if c.IsDeleting() && c.IsProtected() {
			since[c.Name] = c.DeletionTimestamp.Time
		}
	})
	ch <- prometheus.MustNewConstMetric(releasesWaitingDesc, prometheus.GaugeValue, float64(len(since)))
	now := time.Now()
	for name, t := range since {
		ch <- prometheus.MustNewConstMetric(releaseWaitingDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), name)
	}
}

// eachConfig calls fn with every SandboxConfig of every registered cache,
// read without a copy: fn only reads. A cache that does not answer is
// skipped: a cache not synced yet answers after its sync, and a scrape
// does not wait that long.
func (w *waiting) eachConfig(fn func(*v1alpha1.SandboxConfig)) {
	w.mu.Lock()
	readers := make([]ctrlclient.Reader, 0, len(w.sources))
	for r := range w.sources {
		readers = append(readers, *r)
	}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, r := range readers {
		var list v1alpha1.SandboxConfigList
		if err := r.List(ctx, &list, ctrlclient.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
	}
}
