package kubectlate_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// TestBinary builds cmd/kubectl-ate once, as `make plugin` does, and runs
// it from PATH: by its name, and as `kubectl ate` when kubectl is there
// (kubectl finds plugins on PATH by the kubectl- prefix).
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the plugin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X ate.dev/orchestrator/internal/version.Version=v0.0.0-plugintest",
		"-o", filepath.Join(bin, "kubectl-ate"), "../../cmd/kubectl-ate")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	c := newConfig(t, true, step(1))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 1, Message: "step 1 failed"})
	kubeconfig := testenv.Current().KubeconfigPath

	runs := [][]string{{"kubectl-ate"}}
	if _, err := exec.LookPath("kubectl"); err == nil {
		runs = append(runs, []string{"kubectl", "ate"})
	} else {
		t.Logf("no kubectl on PATH: the plugin runs by its own name only")
	}
	for _, prefix := range runs {
		out, err := exec.CommandContext(ctx, prefix[0], append(prefix[1:], "version")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "kubectl-ate v0.0.0-plugintest\n", string(out))
		out, err = exec.CommandContext(ctx, prefix[0], append(prefix[1:], "--version")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "kubectl-ate v0.0.0-plugintest\n", string(out))

		cmd := exec.CommandContext(ctx, prefix[0], append(prefix[1:], "rollout", "status", c.Name, "--kubeconfig", kubeconfig)...)
		out, err = cmd.Output()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%v: %s", err, out)
		require.Equal(t, 1, exit.ExitCode(), "a halted rollout exits 1")
		require.Regexp(t, regexp.MustCompile(`(?m)^  next:      kubectl ate rollout retry `+c.Name), string(out))
	}
}
