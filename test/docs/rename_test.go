package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/wfapi"
)

// renameDoc holds the procedure for renaming a cluster.
const renameDoc = "docs/many-clusters.md"

// TestRenameProcedureCoversWhatDoesNotDrain: a rename changes every
// workflow ID. Switches and releases drain; the operator workflow and
// staged rollouts never end on their own, so the procedure must say what
// to do about each under its real IDs (wfapi's, old and new), how to list
// and terminate the old runs with the temporal CLI, and what a new run
// does with status.rollout.
func TestRenameProcedureCoversWhatDoesNotDrain(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), renameDoc))
	require.NoError(t, err)
	doc := string(b)
	start := strings.Index(doc, "Choose the name before the first install.")
	require.GreaterOrEqual(t, start, 0, "%s has no rename procedure", renameDoc)
	section := doc[start:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	// Markdown wraps lines: compare on single spaces.
	section = strings.Join(strings.Fields(section), " ")
	old, renamed := wfapi.Cluster("OLD"), wfapi.Cluster("NEW")
	tests := []struct {
		name string
		want string
	}{
		{"the operator workflow's old ID", old.OperatorWorkflowID()},
		{"a rollout's old ID", old.RolloutWorkflowID("<config>")},
		{"a rollout's new ID", renamed.RolloutWorkflowID("<config>")},
		{"the field naming a rollout's ID", "status.rollout.workflowID"},
		{"how to list the old rollouts", "WorkflowType = '" + wfapi.RolloutWorkflow + "'"},
		{"how to terminate one", "temporal workflow terminate --workflow-id " + old.RolloutWorkflowID("<config>")},
		{"what a new run goes on from", "goes on from `status.rollout`"},
		{"what becomes of a halted rollout", "stays halted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, section, tt.want, "%s's rename procedure", renameDoc)
		})
	}
}
