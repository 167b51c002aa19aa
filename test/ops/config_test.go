package ops

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/syncbuf"
	"ate.dev/orchestrator/internal/testenv"
)

// TestWorkerConnectsFromATOMLProfile starts the built worker with nothing
// but a temporal CLI profile file to find Temporal (TEMPORAL_CONFIG_FILE,
// TEMPORAL_PROFILE; no TEMPORAL_ADDRESS or TEMPORAL_NAMESPACE) and sees it
// become ready against the real Temporal server, with text logs at debug
// (--log-format, --log-level). The file's default profile names an address
// nobody listens on: the same binary without TEMPORAL_PROFILE stays
// unready, so the profile is what connected it.
func TestWorkerConnectsFromATOMLProfile(t *testing.T) {
	env := testenv.Current()
	bin := buildCommand(t, "worker")
	dir := t.TempDir()
	profiles := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(profiles, fmt.Appendf(nil, `# as "temporal config set" writes it
[profile.default]
address = "127.0.0.1:1"
namespace = "nowhere"

[profile.ate-test]
address = %q
namespace = %q
`, env.TemporalAddress, env.TemporalNamespace), 0o600))

	base := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"KUBECONFIG=" + env.KubeconfigPath,
		"TEMPORAL_CONFIG_FILE=" + profiles,
		"TEMPORAL_TASK_QUEUE=" + testenv.TaskQueue(t),
		"METRICS_SECURE=false",
	}

	t.Run("the named profile", func(t *testing.T) {
		p := startWorker(t, bin, append(base, "TEMPORAL_PROFILE=ate-test"), "--log-format=text", "--log-level=debug")
		producttest.EventuallyWithin(t, 2*time.Minute, "the worker to be ready", func() (bool, string) {
			code, body := p.get("/readyz")
			return code == http.StatusOK, fmt.Sprintf("/readyz %d %s; log:\n%s", code, body, p.tail())
		})
		log := p.log.String()
		require.Contains(t, log, fmt.Sprintf("msg=\"Temporal connection\" process=worker address=%s namespace=%s configFile=%s profile=ate-test", env.TemporalAddress, env.TemporalNamespace, profiles))
		require.Contains(t, log, "level=DEBUG", "--log-level=debug")
		require.NotContains(t, log, `{"time"`, "--log-format=text writes no JSON")
		// Its metrics (plain HTTP on loopback) have the Temporal SDK's.
		producttest.Eventually(t, "the worker's Temporal SDK metrics", func() (bool, string) {
			code, body := p.get("/metrics")
			return code == http.StatusOK && strings.Contains(body, "temporal_request"), fmt.Sprintf("/metrics %d", code)
		})
	})

	t.Run("the default profile", func(t *testing.T) {
		p := startWorker(t, bin, base)
		producttest.EventuallyWithin(t, 2*time.Minute, "the worker to try the default profile's address", func() (bool, string) {
			return strings.Contains(p.log.String(), `"msg":"cannot connect to Temporal; retrying","process":"worker","address":"127.0.0.1:1","namespace":"nowhere"`), p.tail()
		})
		code, body := p.get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, "not connected to Temporal yet")
	})
}

// buildCommand builds ./cmd/<name> into the test's directory.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/%s: %s", name, out)
	return bin
}

type workerProcess struct {
	health, metrics string
	log             *syncbuf.Buffer
}

// startWorker runs the worker binary with exactly env (and its own probe
// and metrics addresses) until the test ends.
func startWorker(t *testing.T, bin string, env []string, args ...string) *workerProcess {
	t.Helper()
	p := &workerProcess{health: testenv.FreeAddr(t), metrics: testenv.FreeAddr(t), log: &syncbuf.Buffer{}}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(env, "HEALTH_PROBE_BIND_ADDRESS="+p.health, "METRICS_BIND_ADDRESS="+p.metrics)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	require.NoError(t, cmd.Start(), "starting %s", bin)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker log:\n%s", p.log.String())
		}
	})
	return p
}

// get is the status and body of a probe path ("/readyz") or "/metrics";
// 0 while nothing answers.
func (p *workerProcess) get(path string) (int, string) {
	addr := p.health
	if path == "/metrics" {
		addr = p.metrics
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tail is the log's last lines.
func (p *workerProcess) tail() string {
	lines := strings.Split(strings.TrimSpace(p.log.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}
