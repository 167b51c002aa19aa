package starterapp

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
	Help: "Signals the starter sent to Temporal, by kind: pool (signal-with-start of a pool workflow), pool-gone (signal to the workflow of a deleted pool), release (signal-with-start of a release workflow).",
}, []string{"kind"})

func init() { ctrlmetrics.Registry.MustRegister(starterSignals) }

func newMetrics() *Metrics { return &Metrics{signals: starterSignals} }

func (m *Metrics) signalled(kind string) { m.signals.WithLabelValues(kind).Inc() }
