package starter

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics counts what the starter sends to Temporal.
type Metrics struct {
	signals *prometheus.CounterVec
}

var starterSignals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ate_starter_signals_total",
	Help: "Requests the starter sent to Temporal, by kind: switch (start of a pool's switch workflow), switch-running (a start refused because the pool's switch was still running; retried with a backoff per pool doubling from 1 s to 30 s), reresolve (a reresolve signal asking the pool's running switch to re-plan, sent once per distinct move it does not work on), release (signal-with-start of a release workflow).",
}, []string{"kind"})

func init() { ctrlmetrics.Registry.MustRegister(starterSignals) }

func newMetrics() *Metrics { return &Metrics{signals: starterSignals} }

func (m *Metrics) signalled(kind string) { m.signals.WithLabelValues(kind).Inc() }
