// Package metrics exports the Temporal SDK's metrics, and the product's own
// metrics recorded through the SDK's handler (replay-safe in workflow code),
// to Prometheus.
//
// The SDK names a metric and attaches tags per call, and one name can be
// used with different tag sets. Prometheus wants one label set per metric
// family, so series are kept as they come and exported at scrape time with
// the union of their family's label names, missing labels empty.
package metrics

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

type kind int

const (
	counter kind = iota
	gauge
	timer
)

// ProcessLabel is the label every series of a process's handler carries
// (options.Process tags its handler with it): worker or starter. It scopes
// the dashboard's and the alerts' queries of the SDK's generic metrics
// (temporal_*) to this product in a Prometheus that scrapes other Temporal
// workers too (deploy/monitoring).
const ProcessLabel = "ate_process"

// exportedLabels renames SDK tags on export. The SDK tags its metrics with
// the Temporal namespace as "namespace", which the namespace label of
// Kubernetes service discovery (the Prometheus Operator's PodMonitor, the
// kubernetes_sd relabelings) would overwrite or push aside as
// "exported_namespace": exported as temporal_namespace, both are kept.
var exportedLabels = map[string]string{"namespace": "temporal_namespace"}

// labelName is the Prometheus label of an SDK tag.
func labelName(tag string) string {
	if n, ok := exportedLabels[tag]; ok {
		return n
	}
	return sanitize(tag)
}

// Handler is a client.MetricsHandler that feeds a Prometheus collector.
type Handler struct {
	store *store
	tags  map[string]string
}

var _ client.MetricsHandler = (*Handler)(nil)

// NewHandler returns a handler whose metrics reg exports.
func NewHandler(reg prometheus.Registerer) (*Handler, error) {
	s := &store{families: map[string]*family{}}
	if err := reg.Register(s); err != nil {
		return nil, err
	}
	return &Handler{store: s, tags: map[string]string{}}, nil
}

// ForProcess is the handler of the process named process (worker,
// starter): NewHandler's, every series labelled ProcessLabel=process.
func ForProcess(reg prometheus.Registerer, process string) (client.MetricsHandler, error) {
	h, err := NewHandler(reg)
	if err != nil {
		return nil, err
	}
	return h.WithTags(map[string]string{ProcessLabel: process}), nil
}

// WithTags returns a handler that adds tags to every metric it records.
func (h *Handler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &Handler{store: h.store, tags: merged}
}

// Counter returns a counter; exported as <name>_total.
func (h *Handler) Counter(name string) client.MetricsCounter {
	_, s := h.store.series(name, counter, h.tags)
	return counterFunc(func(d int64) { h.store.add(s, float64(d)) })
}

// Gauge returns a gauge.
func (h *Handler) Gauge(name string) client.MetricsGauge {
	_, s := h.store.series(name, gauge, h.tags)
	return gaugeFunc(func(v float64) { h.store.set(s, v) })
}

// Timer returns a timer; exported as a histogram <name>_seconds.
func (h *Handler) Timer(name string) client.MetricsTimer {
	f, s := h.store.series(name, timer, h.tags)
	return timerFunc(func(d time.Duration) { h.store.observe(f, s, d.Seconds()) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

type store struct {
	mu       sync.Mutex
	families map[string]*family
}

type family struct {
	name    string
	kind    kind
	buckets []float64 // upper bounds of a timer's histogram
	series  map[string]*series
}

type series struct {
	labels  map[string]string
	value   float64
	count   uint64
	buckets []uint64
}

func (s *store) series(name string, k kind, tags map[string]string) (*family, *series) {
	name = exportName(name, k)
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.families[name]
	if f == nil {
		f = &family{name: name, kind: k, series: map[string]*series{}}
		if k == timer {
			f.buckets = bucketsOf(name)
		}
		s.families[name] = f
	}
	key := seriesKey(tags)
	sr := f.series[key]
	if sr == nil {
		labels := make(map[string]string, len(tags))
		for k, v := range tags {
			labels[labelName(k)] = v
		}
		sr = &series{labels: labels}
		if k == timer {
			sr.buckets = make([]uint64, len(f.buckets))
		}
		f.series[key] = sr
	}
	return f, sr
}

func (s *store) add(sr *series, d float64) {
	s.mu.Lock()
	sr.value += d
	s.mu.Unlock()
}

func (s *store) set(sr *series, v float64) {
	s.mu.Lock()
	sr.value = v
	s.mu.Unlock()
}

func (s *store) observe(f *family, sr *series, v float64) {
	s.mu.Lock()
	sr.value += v
	sr.count++
	for i, b := range f.buckets {
		if v <= b {
			sr.buckets[i]++
		}
	}
	s.mu.Unlock()
}

// Describe sends nothing: the families are only known once recorded, which
// makes this an unchecked collector.
func (s *store) Describe(chan<- *prometheus.Desc) {}

// Collect exports every series with its family's union of label names.
func (s *store) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.families {
		names := labelNames(f)
		desc := prometheus.NewDesc(f.name, helpOf(f.name), names, nil)
		for _, sr := range f.series {
			values := make([]string, len(names))
			for i, n := range names {
				values[i] = sr.labels[n]
			}
			var m prometheus.Metric
			var err error
			switch f.kind {
			case counter:
				m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, sr.value, values...)
			case gauge:
				m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, sr.value, values...)
			case timer:
				buckets := make(map[float64]uint64, len(f.buckets))
				for i, b := range f.buckets {
					buckets[b] = sr.buckets[i]
				}
				m, err = prometheus.NewConstHistogram(desc, sr.count, sr.value, buckets, values...)
			}
			if err == nil {
				ch <- m
			}
		}
	}
}

func labelNames(f *family) []string {
	set := map[string]bool{}
	for _, sr := range f.series {
		for k := range sr.labels {
			set[k] = true
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func seriesKey(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

func exportName(name string, k kind) string {
	name = sanitize(name)
	switch {
	case k == counter && !strings.HasSuffix(name, "_total"):
		return name + "_total"
	case k == timer && !strings.HasSuffix(name, "_seconds"):
		return name + "_seconds"
	}
	return name
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}
