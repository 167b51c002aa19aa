package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// sdkMetricNames reads the metric names the Temporal Go SDK in go.mod
// defines (its internal constants, which no package exports), so that an
// SDK upgrade adding a metric fails here until it has its HELP.
func sdkMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	require.NoError(t, err, "locating the Temporal SDK's module")
	file := filepath.Join(strings.TrimSpace(string(out)), "internal", "common", "metrics", "constants.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	consts := map[string]string{}
	var eval func(ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok
		case *ast.BinaryExpr:
			a, ok1 := eval(e.X)
			b, ok2 := eval(e.Y)
			return a + b, ok1 && ok2 && e.Op == token.ADD
		}
		return "", false
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		// The block of metric names opens with their prefix; the other
		// blocks are tag names and values (such as "temporal_go").
		if first, ok := g.Specs[0].(*ast.ValueSpec); !ok || first.Names[0].Name != "TemporalMetricsPrefix" {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if v, ok := eval(vs.Values[i]); ok {
					consts[n.Name] = v
					if strings.HasPrefix(v, "temporal_") && len(v) > len("temporal_") {
						names[v] = true
					}
				}
			}
		}
	}
	require.Greater(t, len(names), 40, "metric names found in %s", file)
	// Names the SDK builds elsewhere: its gRPC interceptor's per-attempt
	// request metrics (grpc_dialer.go, attemptSuffix) and its resource
	// tuner's gauges (resource_tuner.go).
	for _, n := range []string{"request", "request_failure", "request_latency", "long_request", "long_request_failure", "long_request_latency"} {
		names["temporal_"+n+"_attempt"] = true
	}
	names["temporal_resource_slots_cpu_usage"] = true
	names["temporal_resource_slots_mem_usage"] = true
	return names
}

// TestHelpCoversTheSDK: every SDK metric, as any of the three kinds the
// handler exports (counter, gauge, timer), has HELP of its own.
func TestHelpCoversTheSDK(t *testing.T) {
	for name := range sdkMetricNames(t) {
		found := false
		for _, k := range []kind{counter, gauge, timer} {
			if _, ok := help[exportName(name, k)]; ok {
				found = true
			}
		}
		require.True(t, found, "no HELP for the SDK's %s in help.go", name)
	}
	seen := map[string]string{}
	for name, h := range help {
		require.NotContains(t, seen, h, "%s and %s share a HELP", name, seen[h])
		seen[h] = name
	}
}

// TestTimerBuckets: a release can wait days, a switch retries for minutes;
// each family exports the buckets of what it measures.
func TestTimerBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewHandler(reg)
	require.NoError(t, err)
	h.Timer("ate_release_wait").Record(3 * 24 * time.Hour)
	h.Timer("ate_switch_duration").Record(20 * time.Minute)
	h.Timer("temporal_activity_execution_latency").Record(3 * time.Millisecond)
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, tc := range []struct {
		family  string
		largest float64 // seconds
		holding float64 // the bound of the first bucket that counts the observation
	}{
		{"ate_release_wait_seconds", 30 * 86400, 4 * 86400},
		{"ate_switch_duration_seconds", 3600, 1800},
		{"temporal_activity_execution_latency_seconds", 300, .005},
	} {
		t.Run(tc.family, func(t *testing.T) {
			var f *dto.MetricFamily
			for _, g := range fams {
				if g.GetName() == tc.family {
					f = g
				}
			}
			require.NotNil(t, f)
			require.Equal(t, helpOf(tc.family), f.GetHelp())
			buckets := f.GetMetric()[0].GetHistogram().GetBucket()
			require.Equal(t, tc.largest, buckets[len(buckets)-1].GetUpperBound())
			for _, b := range buckets {
				if b.GetCumulativeCount() > 0 {
					require.Equal(t, tc.holding, b.GetUpperBound())
					break
				}
			}
		})
	}
}
