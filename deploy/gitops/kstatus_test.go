// Package gitops_test checks what Flux makes of a SandboxConfig: its
// kustomize-controller (`wait: true`, healthChecks) and helm-controller
// read objects with kstatus, Flux's fork of it, which this test links.
package gitops_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// What kstatus says of each phase's fixture (the Argo CD health check's,
// deploy/gitops/argocd), as docs/gitops.md tells it: a live rollout is
// InProgress until it completes, a halted, aborted or rolled-back one Failed (Stalled),
// one waiting for a person (Paused, AwaitingApproval) InProgress, so that
// a Kustomization waiting on it times out.
func TestKstatusOfEachPhase(t *testing.T) {
	tests := map[string]status.Status{
		// No status written yet: nothing for kstatus to wait on.
		"no_status":         status.CurrentStatus,
		"generation_behind": status.InProgressStatus,
		"no_rollout":        status.CurrentStatus,
		"pending":           status.InProgressStatus,
		"progressing":       status.InProgressStatus,
		"baking":            status.InProgressStatus,
		"paused":            status.InProgressStatus,
		"paused_spec":       status.InProgressStatus,
		"awaiting_approval": status.InProgressStatus,
		"awaiting_clusters": status.InProgressStatus,
		"halted":            status.FailedStatus,
		"aborted":           status.FailedStatus,
		"rolled_back":       status.FailedStatus,
		"completed":         status.CurrentStatus,
		"superseded":        status.CurrentStatus,
		"stopped":           status.CurrentStatus,
		// Before the conditions, kstatus saw nothing of a rollout.
		"legacy_progressing": status.CurrentStatus,
		"legacy_halted":      status.CurrentStatus,
		"legacy_completed":   status.CurrentStatus,
	}
	files, err := filepath.Glob("argocd/ate.dev/SandboxConfig/testdata/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, len(tests), "a fixture without a kstatus here, or one gone")
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("argocd/ate.dev/SandboxConfig/testdata", name+".yaml"))
			require.NoError(t, err)
			// unstructured holds integers as int64, as the API's JSON decodes them.
			u := &unstructured.Unstructured{}
			require.NoError(t, u.UnmarshalJSON(mustJSON(t, b)))
			res, err := status.Compute(u)
			require.NoError(t, err)
			require.Equal(t, want, res.Status, res.Message)
		})
	}
}

func mustJSON(t *testing.T, y []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	require.NoError(t, err)
	return j
}
