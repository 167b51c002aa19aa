package crashtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// metered prepares a worker or a starter that serves /metrics as a
// deployment does, but in plain HTTP on a loopback address of its own (the
// product's METRICS_SECURE=false), and returns it with that address.
func metered(t *testing.T, role, taskQueue string) (*process, string) {
	t.Helper()
	p := newProcess(t, role, taskQueue, "")
	addr := testenv.FreeAddr(t)
	// Later entries win over newProcess's METRICS_BIND_ADDRESS=0.
	p.env = append(p.env, "METRICS_BIND_ADDRESS="+addr, "METRICS_SECURE=false")
	return p, addr
}

// scrapeMetrics reads a process's /metrics as Prometheus does.
func scrapeMetrics(addr string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics on %s: %s: %s", addr, resp.Status, b)
	}
	return string(b), nil
}

// switchedOnce matches the confirmed-switch counter at 1, whatever other
// tags (task queue, workflow type) the SDK adds.
var switchedOnce = regexp.MustCompile(`(?m)^ate_switches_total\{[^}]*outcome="confirmed"[^}]*sandbox_class="gvisor"[^}]*\} 1$`)

// starterSignalled matches the starter's switch signal counter, whatever
// other labels (the cluster's name) it carries.
var starterSignalled = regexp.MustCompile(`(?m)^ate_starter_signals_total\{[^}]*kind="switch"[^}]*\} `)

// TestMetricsMoveAfterASwitch: the worker and the starter, real processes
// configured as a Deployment configures them, each serve their own
// /metrics; after one switch, scraped as Prometheus scrapes them, the
// worker's shows the product's switch counter and duration and the
// Temporal SDK's local activity latency, the starter's its signal counter
// and controller-runtime's reconcile counter.
func TestMetricsMoveAfterASwitch(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "mx" + shortID()
	tq := testenv.TaskQueue(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{tq}}
	worker, workerMetrics := metered(t, "worker", tq)
	starter, starterMetrics := metered(t, "starter", tq)
	worker.Start()
	starter.Start()

	require.NoError(t, env.Kube.Create(context.Background(), gvisorConfig(prefix+"-default", true)))
	require.NoError(t, env.Kube.Create(context.Background(), newPool(ns, "measured", v1alpha1.SandboxClassGVisor, "")))
	settle(t, chk, scope)

	for _, c := range []struct {
		process, addr string
		want          func(body string) bool
	}{
		{"worker", workerMetrics, func(body string) bool {
			return switchedOnce.MatchString(body) &&
				strings.Contains(body, "ate_switch_duration_seconds_count") &&
				strings.Contains(body, "temporal_local_activity_execution_latency_seconds")
		}},
		{"starter", starterMetrics, func(body string) bool {
			return starterSignalled.MatchString(body) &&
				strings.Contains(body, "controller_runtime_reconcile_total")
		}},
	} {
		eventually(t, stepBound, "the "+c.process+"'s metrics after a switch", func() (bool, string) {
			body, err := scrapeMetrics(c.addr)
			if err != nil {
				return false, err.Error()
			}
			return c.want(body), grepLines(body, "ate_")
		})
	}
	requireSound(t, chk, scope)
}

func grepLines(body, prefix string) string {
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			lines = append(lines, l)
		}
	}
	return fmt.Sprint(lines)
}
