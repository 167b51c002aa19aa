package rollout

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"ate.dev/orchestrator/api/v1alpha1"
)

// DefaultAnalysisInterval is the time between two measurements of a
// step's analysis when spec.rollout.analysis.interval is unset.
const DefaultAnalysisInterval = 30 * time.Second

// MinAnalysisInterval is the shortest interval a measurement is taken at:
// a shorter one, which the CRD lets through as a duration, is raised to
// it, so that an analysis cannot flood Prometheus or the history.
const MinAnalysisInterval = time.Second

// AnalysisInterval is the interval an analysis measures at.
func AnalysisInterval(a *v1alpha1.RolloutAnalysis) time.Duration {
	if a == nil || a.Interval == nil || a.Interval.Duration <= 0 {
		return DefaultAnalysisInterval
	}
	return max(a.Interval.Duration, MinAnalysisInterval)
}

// QueryVars are what a metric's query may name: {{.Config}}, {{.Class}},
// {{.Cluster}}, {{.Step}}, and the step's pools as regular expressions of
// alternatives, {{.Pools}} of their names and {{.Namespaces}} of their
// namespaces (for a label matcher such as pool=~"{{.Pools}}").
type QueryVars struct {
	Config, Class, Cluster string
	Step                   int32
	Pools, Namespaces      string
}

// VarsOf are the query variables of a step whose pools are "namespace/name".
func VarsOf(config, class, cluster string, step int32, pools []string) QueryVars {
	var names, namespaces []string
	for _, p := range pools {
		ns, name, _ := strings.Cut(p, "/")
		names = append(names, promRegexp(name))
		namespaces = append(namespaces, promRegexp(ns))
	}
	slices.Sort(namespaces)
	return QueryVars{Config: config, Class: class, Cluster: cluster, Step: step,
		Pools: strings.Join(names, "|"), Namespaces: strings.Join(slices.Compact(namespaces), "|")}
}

// promRegexp quotes a Kubernetes name for a regular expression inside a
// PromQL double-quoted string: a name's only metacharacter is '.', which
// the string needs as \\. for the expression to see \. .
func promRegexp(name string) string {
	return strings.ReplaceAll(name, ".", `\\.`)
}

// RenderQuery fills a metric's query template with the step's variables.
// Its error names the metric and says what is wrong with the template.
func RenderQuery(m v1alpha1.RolloutMetric, v QueryVars) (string, error) {
	t, err := template.New(m.Name).Option("missingkey=error").Parse(m.Query)
	if err != nil {
		return "", fmt.Errorf("spec.rollout.analysis.metrics[%s].query is not a valid template: %w", m.Name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", fmt.Errorf("spec.rollout.analysis.metrics[%s].query: %w (it may name .Config, .Class, .Cluster, .Step, .Pools and .Namespaces)", m.Name, err)
	}
	return b.String(), nil
}

// Sample is one series of a query's result: its labels ("" for a scalar)
// and its value.
type Sample struct {
	Labels string  `json:"labels,omitempty"`
	Value  float64 `json:"value"`
}

// Measurement is how one query's result judged against its metric's bounds.
type Measurement struct {
	Metric  string                    `json:"metric"`
	Phase   v1alpha1.MeasurementPhase `json:"phase"`
	Value   string                    `json:"value,omitempty"`
	Message string                    `json:"message,omitempty"`
	// Query is the query as run (the template filled in).
	Query string `json:"query,omitempty"`
}

// Judge judges a query's result (or its error) against a metric's bounds:
// Inconclusive on an error or no data, Failed when a series is out of
// bounds (the message names the first), else Successful.
func Judge(m v1alpha1.RolloutMetric, query string, samples []Sample, queryErr error) Measurement {
	samples = unlabelled(samples)
	out := Measurement{Metric: m.Name, Query: query, Value: formatSamples(samples)}
	lo, hi, err := Bounds(m)
	switch {
	case err != nil:
		out.Phase, out.Message = v1alpha1.MeasurementInconclusive, err.Error()
		return out
	case queryErr != nil:
		out.Phase, out.Message = v1alpha1.MeasurementInconclusive, queryErr.Error()
		return out
	case len(samples) == 0:
		out.Phase, out.Message = v1alpha1.MeasurementInconclusive, fmt.Sprintf("no data: the query %s returned no series", query)
		return out
	}
	for _, s := range samples {
		if why := outOfBounds(s.Value, lo, hi, m); why != "" {
			out.Phase, out.Message = v1alpha1.MeasurementFailed, fmt.Sprintf("metric %s%s is %s, %s", m.Name, s.Labels, formatValue(s.Value), why)
			return out
		}
	}
	out.Phase = v1alpha1.MeasurementSuccessful
	return out
}

// Bounds parses a metric's min and max: ±Inf where unset.
func Bounds(m v1alpha1.RolloutMetric) (lo, hi float64, err error) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if m.Min != nil {
		if lo, err = strconv.ParseFloat(*m.Min, 64); err != nil {
			return 0, 0, fmt.Errorf("spec.rollout.analysis.metrics[%s].min %q is not a number", m.Name, *m.Min)
		}
	}
	if m.Max != nil {
		if hi, err = strconv.ParseFloat(*m.Max, 64); err != nil {
			return 0, 0, fmt.Errorf("spec.rollout.analysis.metrics[%s].max %q is not a number", m.Name, *m.Max)
		}
	}
	return lo, hi, nil
}

// outOfBounds says how a value breaks its bounds; "" when it does not. NaN
// breaks any bound: a ratio of nothing to nothing is not a good result.
func outOfBounds(v, lo, hi float64, m v1alpha1.RolloutMetric) string {
	switch {
	case math.IsNaN(v):
		return "not a number, which no bound admits"
	case m.Min != nil && v < lo:
		return "below its min " + *m.Min
	case m.Max != nil && v > hi:
		return "above its max " + *m.Max
	}
	return ""
}

// unlabelled writes the series of an aggregation without labels, which
// Prometheus names {}, as a scalar's, so that sum(...) reads as its number.
func unlabelled(samples []Sample) []Sample {
	out := slices.Clone(samples)
	for i := range out {
		if out[i].Labels == "{}" {
			out[i].Labels = ""
		}
	}
	return out
}

// formatSamples is a result as status shows it: the number of a scalar or
// of one unlabelled series, else each series' labels and number, cut to
// what status keeps.
func formatSamples(samples []Sample) string {
	if len(samples) == 1 && samples[0].Labels == "" {
		return formatValue(samples[0].Value)
	}
	parts := make([]string, 0, len(samples))
	for _, s := range samples {
		parts = append(parts, s.Labels+"="+formatValue(s.Value))
	}
	return truncate(strings.Join(parts, " "), 256)
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Tally counts a step's measurements: the failures of each metric so far
// and the last measurement of each. The workflow keeps one per step run.
type Tally struct {
	Limit    int32
	Failures map[string]int32
	Last     map[string]Measurement
}

// NewTally is the tally of a step with the given failure limit.
func NewTally(limit int32) *Tally {
	return &Tally{Limit: limit, Failures: map[string]int32{}, Last: map[string]Measurement{}}
}

// Add counts a round of measurements; failed, when set, is the one that
// took a metric past the failure limit: the step fails on it.
func (t *Tally) Add(round []Measurement) (failed *Measurement) {
	for i, m := range round {
		t.Last[m.Metric] = m
		if m.Phase != v1alpha1.MeasurementFailed {
			continue
		}
		t.Failures[m.Metric]++
		if t.Failures[m.Metric] > t.Limit && failed == nil {
			failed = &round[i]
		}
	}
	return failed
}

// Inconclusive is what keeps the step from concluding: the metrics not
// measured yet or whose last measurement was inconclusive, in the order
// given, with why; "" when none. A last measurement out of bounds but
// within the failure limit does not hold the step: the limit bears it.
func (t *Tally) Inconclusive(metrics []v1alpha1.RolloutMetric) string {
	var why []string
	for _, m := range metrics {
		last, ok := t.Last[m.Name]
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("metric %s not measured yet", m.Name))
		case last.Phase == v1alpha1.MeasurementInconclusive:
			why = append(why, fmt.Sprintf("metric %s inconclusive: %s", m.Name, last.Message))
		}
	}
	return strings.Join(why, "; ")
}
