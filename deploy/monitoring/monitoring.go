// Package monitoring holds the orchestrator's Grafana dashboard and
// Prometheus alerting rules (dashboard.json, alerts.yaml), embedded so that
// tests can check them: their queries parse, and every metric they name is
// one the worker or the starter exports.
package monitoring

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

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
)

// grafanaVariables stand in for the variables Grafana expands before a
// query reaches Prometheus.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// Query is a PromQL expression and where it comes from.
type Query struct {
	Source string // "dashboard panel <title>" or "alert <name>"
	Expr   string
}

// DashboardQueries returns every query of the dashboard's panels, Grafana
// variables expanded.
func DashboardQueries() ([]Query, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
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
	groups, errs := rulefmt.Parse(Alerts, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("alerts.yaml: %w", errors.Join(errs...))
	}
	return groups, nil
}

// AlertQueries returns the expression of every alerting rule.
func AlertQueries() ([]Query, error) {
	groups, err := Rules()
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
