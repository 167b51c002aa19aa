package argocd_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/deploy/gitops/argocd"
)

// healthTests is Argo CD's health_test.yaml: a fixture and the health it
// reads as.
type healthTests struct {
	Tests []struct {
		InputPath    string `json:"inputPath"`
		HealthStatus struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"healthStatus"`
	} `json:"tests"`
}

func readHealthTests(t *testing.T) healthTests {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(argocd.Dir, "health_test.yaml"))
	require.NoError(t, err)
	var tests healthTests
	require.NoError(t, yaml.Unmarshal(b, &tests))
	return tests
}

// Every fixture reads as health_test.yaml says, through the health.lua of
// argocd-cm.yaml in Argo CD's Lua environment.
func TestHealth(t *testing.T) {
	health, _ := installed(t)
	for _, tc := range readHealthTests(t).Tests {
		t.Run(tc.InputPath, func(t *testing.T) {
			got, err := argoLua{now: time.Now}.run(t, health, fixture(t, filepath.Join(argocd.Dir, tc.InputPath)))
			require.NoError(t, err)
			require.Equal(t, map[string]any{"status": tc.HealthStatus.Status, "message": tc.HealthStatus.Message}, got)
		})
	}
}

// Every fixture of testdata is in health_test.yaml, and every phase of the
// API has one.
func TestHealthCoversEveryFixtureAndPhase(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range readHealthTests(t).Tests {
		tested[tc.InputPath] = true
	}
	files, err := filepath.Glob(filepath.Join(argocd.Dir, "testdata", "*.yaml"))
	require.NoError(t, err)
	phases := map[string]bool{}
	for _, f := range files {
		rel, err := filepath.Rel(argocd.Dir, f)
		require.NoError(t, err)
		require.True(t, tested[rel], "%s is not in health_test.yaml", rel)
		if p, ok := phaseOf(fixture(t, f)); ok {
			phases[p] = true
		}
	}
	for _, p := range allPhases {
		require.True(t, phases[string(p)], "no fixture of phase %s", p)
	}
}
