package monitoring

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// productControllers are the orchestrator's controller-runtime controllers
// (their metrics' controller label, their work queues' name).
var productControllers = []string{"pool-keeper", "switch-starter", "release-starter"}

// TestQueriesAreScopedToTheProduct: in a Prometheus shared with other
// applications, every selector of the dashboard and the rules selects this
// product's series only: the Temporal SDK's generic metrics by ate_process,
// controller-runtime's by the orchestrator's controllers or Lease, and the
// product's own by their ate_ names.
func TestQueriesAreScopedToTheProduct(t *testing.T) {
	dq, err := DashboardQueries()
	require.NoError(t, err)
	aq, err := AlertQueries()
	require.NoError(t, err)
	for _, q := range append(dq, aq...) {
		expr, err := promql.ParseExpr(q.Expr)
		require.NoError(t, err, q.Source)
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			if why := unscoped(vs); why != "" {
				t.Errorf("%s: %s in %q", q.Source, why, q.Expr)
			}
			return nil
		})
	}
}

// unscoped says why a selector could select another application's series,
// or "".
func unscoped(vs *parser.VectorSelector) string {
	matches := func(label string, values ...string) bool {
		for _, m := range vs.LabelMatchers {
			if m.Name != label || m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp {
				continue
			}
			for _, v := range values {
				if m.Matches(v) && !m.Matches("") && !m.Matches("someone-else") {
					return true
				}
			}
		}
		return false
	}
	switch name := vs.Name; {
	case strings.HasPrefix(name, "ate_"):
		return ""
	case strings.HasPrefix(name, "temporal_"):
		if !matches(processLabel, "worker", "starter") {
			return name + " has no " + processLabel + " matcher"
		}
	case name == "leader_election_master_status":
		if !matches("name", "ate-orchestrator-worker", "ate-orchestrator-starter") {
			return name + " selects no Lease of the orchestrator's"
		}
	case strings.HasPrefix(name, "controller_runtime_"):
		if !matches("controller", productControllers...) {
			return name + " selects no controller of the orchestrator's"
		}
	case strings.HasPrefix(name, "workqueue_"):
		if !matches("name", productControllers...) {
			return name + " selects no work queue of the orchestrator's"
		}
	default:
		return name + " is neither the product's nor scoped to it"
	}
	return ""
}

// processLabel is internal/metrics.ProcessLabel, which deploy/ does not
// import (it is no library of the product; test/ops checks the label on a
// real scrape).
const processLabel = "ate_process"

func TestUnscopedSeesAnUnscopedSelector(t *testing.T) {
	for expr, want := range map[string]string{
		`temporal_workflow_task_queue_poll_succeed_total`:                    "has no ate_process matcher",
		`temporal_workflow_task_queue_poll_succeed_total{ate_process=~".*"}`: "has no ate_process matcher",
		`controller_runtime_reconcile_total{controller=~".+"}`:               "selects no controller",
		`leader_election_master_status`:                                      "selects no Lease",
		`up`:                                                                 "neither the product's nor scoped",
		`temporal_num_pollers{ate_process="worker"}`:                         "",
		`workqueue_depth{name="pool-keeper"}`:                                "",
	} {
		e, err := promql.ParseExpr(expr)
		require.NoError(t, err)
		got := unscoped(e.(*parser.VectorSelector))
		if want == "" {
			require.Empty(t, got, expr)
		} else {
			require.Contains(t, got, want, expr)
		}
	}
}
