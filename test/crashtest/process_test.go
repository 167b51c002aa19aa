package crashtest

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/testenv"
)

// process is a worker or a starter of the crash tests (Process).
type process = Process

// newProcess prepares a worker or a starter on a task queue, on the test
// environment's servers. healthAddr is its HEALTH_PROBE_BIND_ADDRESS (""
// for none).
func newProcess(t testing.TB, role, taskQueue, healthAddr string, extraEnv ...string) *process {
	t.Helper()
	worker, starter := binaries(t)
	bin := map[string]string{"worker": worker, "starter": starter}[role]
	env := testenv.Current()
	if healthAddr == "" {
		healthAddr = "0"
	}
	vars := append(HostEnv("TEMPORAL_", "ATE_CRASH_", "KUBECONFIG="),
		"KUBECONFIG="+env.KubeconfigPath,
		"TEMPORAL_ADDRESS="+env.TemporalAddress,
		"TEMPORAL_NAMESPACE="+env.TemporalNamespace,
		"TEMPORAL_TASK_QUEUE="+taskQueue,
		"METRICS_BIND_ADDRESS=0",
		"HEALTH_PROBE_BIND_ADDRESS="+healthAddr,
	)
	vars = append(vars, extraEnv...)
	p := NewProcess(t, role, bin, vars, filepath.Join(env.Dir, "crashtest", testenv.UniqueName(t)))
	p.healthAddr = healthAddr
	return p
}

// probe returns the HTTP status of a probe path, or 0 when nothing answers.
func (p *process) probe(path string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.healthAddr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
