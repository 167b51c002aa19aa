package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// TestGeneratedFilesAreCurrent is the drift check of `make monitoring`:
// each generated file, here and in the Helm chart, is what its source
// renders today.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Files()
	require.NoError(t, err)
	require.Len(t, files, 4)
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", path))
		require.NoError(t, err, path)
		require.Equal(t, string(want), string(got), "%s is stale: edit its .tmpl source and run `make monitoring`", path)
	}
	// The embedded copies are the files on disk.
	require.Equal(t, string(files["deploy/monitoring/alerts.yaml"]), string(Alerts))
	require.Equal(t, string(files["deploy/monitoring/dashboard.json"]), string(Dashboard))
}

func TestGenerateRefusesALabelPrometheusDrops(t *testing.T) {
	for _, l := range []string{"", "k8s-cluster", "__cluster", "1st"} {
		_, err := Generate(Config{ClusterLabel: l})
		require.Error(t, err, "%q", l)
	}
}

// TestDashboardFiltersByCluster: the dashboard has a cluster variable that
// lists the label's values, and every selector of every panel is filtered
// by it, under any label name.
func TestDashboardFiltersByCluster(t *testing.T) {
	for _, label := range []string{DefaultClusterLabel, "k8s_cluster"} {
		t.Run(label, func(t *testing.T) {
			g, err := Generate(Config{ClusterLabel: label})
			require.NoError(t, err)
			var d struct {
				Templating struct {
					List []variable `json:"list"`
				} `json:"templating"`
			}
			require.NoError(t, json.Unmarshal(g.Dashboard, &d))
			i := slices.IndexFunc(d.Templating.List, func(v variable) bool { return v.Name == "cluster" })
			require.GreaterOrEqual(t, i, 0, "no variable cluster")
			v := d.Templating.List[i]
			require.Equal(t, "query", v.Type)
			want := `label_values(leader_election_master_status{name=~"ate-orchestrator-(worker|starter)"}, ` + label + `)`
			var query struct {
				Query string `json:"query"`
			}
			require.NoError(t, json.Unmarshal(v.Query, &query))
			require.Equal(t, want, query.Query)
			require.Equal(t, want, v.Definition)

			qs, err := DashboardQueriesOf(g.Dashboard)
			require.NoError(t, err)
			require.NotEmpty(t, qs)
			for _, q := range qs {
				expr, err := promql.ParseExpr(q.Expr)
				require.NoError(t, err, q.Source)
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok {
						require.True(t, slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
							return m.Name == label && m.Type == labels.MatchRegexp && m.Value == "$cluster"
						}), "%s: %s is not filtered by %s=~\"$cluster\"", q.Source, vs, label)
					}
					return nil
				})
			}
		})
	}
}

// variable is what the tests read of a dashboard variable.
type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Definition string          `json:"definition"`
	Query      json.RawMessage `json:"query"` // the datasource variable's is a string
}

// TestAlertsGroupByCluster: every aggregation of every alert keeps the
// cluster label (by it, never without), so that each alert fires per
// cluster and says which; vector(0), the fallback when nothing of the
// product is scraped at all, is the one series without it.
func TestAlertsGroupByCluster(t *testing.T) {
	for _, label := range []string{DefaultClusterLabel, "k8s_cluster"} {
		t.Run(label, func(t *testing.T) {
			g, err := Generate(Config{ClusterLabel: label})
			require.NoError(t, err)
			qs, err := AlertQueriesOf(g.Alerts)
			require.NoError(t, err)
			require.Len(t, qs, 9)
			for _, q := range qs {
				expr, err := promql.ParseExpr(q.Expr)
				require.NoError(t, err, q.Source)
				parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
					switch n := n.(type) {
					case *parser.AggregateExpr:
						require.False(t, n.Without, "%s: %s", q.Source, n)
						require.Contains(t, n.Grouping, label, "%s: %s drops the cluster", q.Source, n)
					case *parser.VectorSelector:
						// A selector outside any aggregation keeps its
						// series' labels, the cluster among them.
					case *parser.BinaryExpr:
						if n.VectorMatching != nil && n.VectorMatching.On && len(n.VectorMatching.MatchingLabels) > 0 {
							require.Contains(t, n.VectorMatching.MatchingLabels, label, "%s: %s", q.Source, n)
						}
					}
					return nil
				})
			}
		})
	}
}
