// Package monitoring holds the orchestrator's Grafana dashboard and
// Prometheus alerting rules (dashboard.json, alerts.yaml), embedded so that
// tests can check them: their queries parse, and every metric they name is
// one the worker or the starter exports.
//
// Both are generated (Generate, `make monitoring`) from one source each,
// dashboard.json.tmpl and alerts.yaml.tmpl, for a Config: the label that
// carries the cluster's name, which the dashboard's cluster variable lists
// and every panel filters by, and every alert groups by. The files here are
// the default config's; the Helm chart's copies (deploy/chart/files/monitoring)
// carry a placeholder the chart replaces with its monitoring.clusterLabel.
package monitoring

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

var (
	//go:embed dashboard.json
	Dashboard []byte
	//go:embed alerts.yaml
	Alerts []byte
	//go:embed dashboard.json.tmpl alerts.yaml.tmpl
	sources embed.FS
)

// DefaultClusterLabel is the label of the cluster's name the files here are
// generated for: what the worker and the starter export by default
// (internal/metrics.DefaultClusterLabel, which deploy/ does not import), and
// what monitoring mixins call clusterLabel.
const DefaultClusterLabel = "cluster"

// ChartClusterLabel stands for the cluster label in the Helm chart's copies
// of the files: its templates replace it with .Values.monitoring.clusterLabel.
const ChartClusterLabel = "ATE_CLUSTER_LABEL"

// Config is what the generated files depend on.
type Config struct {
	// ClusterLabel is the label that carries the cluster's name on every
	// series of the orchestrator's (--metrics-cluster-label).
	ClusterLabel string
}

// DefaultConfig is the config of deploy/monitoring's own files.
var DefaultConfig = Config{ClusterLabel: DefaultClusterLabel}

// Generated are the files of a Config.
type Generated struct {
	Dashboard, Alerts []byte
}

// Generate renders the dashboard and the alerting rules for cfg. The
// sources' own template actions are delimited by [[ ]], so that Grafana's
// ${...} and Prometheus's {{ $labels... }} pass through.
func Generate(cfg Config) (Generated, error) {
	if !model.LegacyValidation.IsValidLabelName(cfg.ClusterLabel) || strings.HasPrefix(cfg.ClusterLabel, "__") {
		return Generated{}, fmt.Errorf("cluster label %q is not a Prometheus label name a scrape keeps", cfg.ClusterLabel)
	}
	render := func(name string) ([]byte, error) {
		t, err := template.New(name).Delims("[[", "]]").Option("missingkey=error").ParseFS(sources, name)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, cfg); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", name, err)
		}
		return b.Bytes(), nil
	}
	var g Generated
	var err error
	if g.Dashboard, err = render("dashboard.json.tmpl"); err != nil {
		return Generated{}, err
	}
	if g.Alerts, err = render("alerts.yaml.tmpl"); err != nil {
		return Generated{}, err
	}
	return g, nil
}

// grafanaVariables stand in for the variables Grafana expands before a
// query reaches Prometheus.
// The cluster variable stays: "$cluster" is a valid regular expression in
// a matcher; tests that evaluate a panel replace it with a cluster's name.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// Query is a PromQL expression and where it comes from.
type Query struct {
	Source string // "dashboard panel <title>" or "alert <name>"
	Expr   string
}

// DashboardQueries returns every query of the dashboard's panels, Grafana
// variables expanded.
func DashboardQueries() ([]Query, error) {
	return DashboardQueriesOf(Dashboard)
}

// DashboardQueriesOf returns every query of a dashboard's panels, Grafana
// variables expanded.
func DashboardQueriesOf(dashboard []byte) ([]Query, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("reading dashboard.json: %w", err)
	}
	var qs []Query
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			qs = append(qs, Query{Source: "dashboard panel " + p.Title, Expr: grafanaVariables.Replace(t.Expr)})
		}
	}
	return qs, nil
}

// promql is the PromQL parser of a Prometheus server with default flags.
var promql = parser.NewParser(parser.Options{})

// Rules parses alerts.yaml as a Prometheus server loads a rule file:
// Prometheus's own rule parser, unknown fields refused, every expression,
// label and annotation template validated.
func Rules() (*rulefmt.RuleGroups, error) {
	return RulesOf(Alerts)
}

// RulesOf parses a rule file as Rules does.
func RulesOf(alerts []byte) (*rulefmt.RuleGroups, error) {
	groups, errs := rulefmt.Parse(alerts, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("alerts.yaml: %w", errors.Join(errs...))
	}
	return groups, nil
}

// AlertQueries returns the expression of every alerting rule.
func AlertQueries() ([]Query, error) {
	return AlertQueriesOf(Alerts)
}

// AlertQueriesOf returns the expression of every alerting rule of a rule
// file.
func AlertQueriesOf(alerts []byte) ([]Query, error) {
	groups, err := RulesOf(alerts)
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			qs = append(qs, Query{Source: "alert " + r.Alert, Expr: r.Expr})
		}
	}
	return qs, nil
}

// MetricNames parses the dashboard's and the rules' queries with
// Prometheus's PromQL parser and returns the metric names they select,
// each with the queries that use it.
func MetricNames() (map[string][]string, error) {
	dq, err := DashboardQueries()
	if err != nil {
		return nil, err
	}
	aq, err := AlertQueries()
	if err != nil {
		return nil, err
	}
	names := map[string][]string{}
	for _, q := range append(dq, aq...) {
		expr, err := promql.ParseExpr(q.Expr)
		if err != nil {
			return nil, fmt.Errorf("%s: parsing %q: %w", q.Source, q.Expr, err)
		}
		var inspectErr error
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					if m.Type != labels.MatchEqual {
						inspectErr = fmt.Errorf("%s: %q selects metrics by a pattern; name them so they can be checked", q.Source, q.Expr)
					}
					name = m.Value
				}
			}
			if !slices.Contains(names[name], q.Source) {
				names[name] = append(names[name], q.Source)
			}
			return nil
		})
		if inspectErr != nil {
			return nil, inspectErr
		}
	}
	for _, s := range names {
		sort.Strings(s)
	}
	return names, nil
}

// Files are the generated files, by path from the repository's root: the
// default config's here, and the Helm chart's copies with ChartClusterLabel
// for the chart's templates to replace.
func Files() (map[string][]byte, error) {
	def, err := Generate(DefaultConfig)
	if err != nil {
		return nil, err
	}
	chart, err := Generate(Config{ClusterLabel: ChartClusterLabel})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"deploy/monitoring/dashboard.json":             def.Dashboard,
		"deploy/monitoring/alerts.yaml":                def.Alerts,
		"deploy/chart/files/monitoring/dashboard.json": chart.Dashboard,
		"deploy/chart/files/monitoring/alerts.yaml":    chart.Alerts,
	}, nil
}
