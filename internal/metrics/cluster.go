package metrics

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultClusterLabel is the label that carries the cluster's name on every
// series a process exports (--metrics-cluster-label): the label a fleet's
// Prometheus setups (Thanos, Mimir, a federation) conventionally key
// clusters by, and the one deploy/monitoring's dashboard and alerts group
// and filter by unless told another.
const DefaultClusterLabel = "cluster"

// ValidateLabelName accepts a Prometheus label name a scrape keeps: legacy
// characters (the dashboard's and the rules' PromQL names it unquoted), and
// not one of the __ names Prometheus reserves and drops.
func ValidateLabelName(name string) error {
	if !model.LegacyValidation.IsValidLabelName(name) {
		return fmt.Errorf("%q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)", name)
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%q begins with __, which Prometheus reserves and drops on scrape", name)
	}
	return nil
}

// ClusterRegistry is a registry whose every gathered series carries the
// cluster's name under one label, once the cluster is named (SetCluster):
// the SDK's series, the product's own (collectors, gauges read at scrape
// time), controller-runtime's, client-go's, the Go runtime's. Labelling at
// the gatherer, rather than in each metric, leaves none out, including
// metrics registered by libraries.
//
// A series that already has the label keeps its own value: the workflows'
// metrics may carry their workflow's cluster under it.
type ClusterRegistry struct {
	prometheus.Registerer
	gatherer prometheus.Gatherer

	mu      sync.Mutex
	label   string
	cluster *string
}

// NewClusterRegistry labels what reg gathers with label.
func NewClusterRegistry(reg prometheus.Registerer, g prometheus.Gatherer, label string) (*ClusterRegistry, error) {
	if err := ValidateLabelName(label); err != nil {
		return nil, err
	}
	return &ClusterRegistry{Registerer: reg, gatherer: g, label: label}, nil
}

// Label is the label the cluster's name goes under.
func (r *ClusterRegistry) Label() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.label
}

// SetCluster names the cluster: every later scrape carries it.
func (r *ClusterRegistry) SetCluster(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cluster = &cluster
}

// Gather gathers the registry's families, each series labelled with the
// cluster once it is named. Before that (a process that waits to name its
// cluster is not ready), as they are.
func (r *ClusterRegistry) Gather() ([]*dto.MetricFamily, error) {
	fams, err := r.gatherer.Gather()
	r.mu.Lock()
	label, c := r.label, r.cluster
	r.mu.Unlock()
	if c == nil {
		return fams, err
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			m.Label = withLabel(m.GetLabel(), label, *c)
		}
	}
	return fams, err
}

// withLabel is ls with name=value in its place (Prometheus's exposition
// wants them sorted by name), unless ls has name already.
func withLabel(ls []*dto.LabelPair, name, value string) []*dto.LabelPair {
	i := sort.Search(len(ls), func(i int) bool { return ls[i].GetName() >= name })
	if i < len(ls) && ls[i].GetName() == name {
		return ls
	}
	out := make([]*dto.LabelPair, 0, len(ls)+1)
	out = append(out, ls[:i]...)
	out = append(out, &dto.LabelPair{Name: &name, Value: &value})
	return append(out, ls[i:]...)
}

var installMu sync.Mutex

// LabelClusterOnScrape makes controller-runtime's registry, which its
// metrics server serves (probes.ServeMetrics) and where the process records
// the SDK's metrics and its own, a ClusterRegistry with label; the
// process's naming of its cluster then sets the value (SetCluster). A
// later call (tests run a process's setup more than once) returns the same
// registry with its label changed and its cluster not named yet: a metrics
// server already started keeps serving it.
func LabelClusterOnScrape(label string) (*ClusterRegistry, error) {
	if err := ValidateLabelName(label); err != nil {
		return nil, err
	}
	installMu.Lock()
	defer installMu.Unlock()
	if cr, ok := ctrlmetrics.Registry.(*ClusterRegistry); ok {
		cr.mu.Lock()
		cr.label, cr.cluster = label, nil
		cr.mu.Unlock()
		return cr, nil
	}
	cr, err := NewClusterRegistry(ctrlmetrics.Registry, ctrlmetrics.Registry, label)
	if err != nil {
		return nil, err
	}
	ctrlmetrics.Registry = cr
	return cr, nil
}
