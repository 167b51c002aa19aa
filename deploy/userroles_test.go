package deploy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUserRolesREADMEOptOut builds the overlay deploy/README.md shows to keep
// WorkerPools out of edit and admin: the editor role loses its aggregation
// labels, and no other object changes.
func TestUserRolesREADMEOptOut(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var snippet string
	for _, m := range yamlBlock.FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "ate-workerpool-editor") && strings.Contains(m[1], "op: remove") {
			snippet = m[1]
		}
	}
	require.NotEmpty(t, snippet, "deploy/README.md has no overlay removing the editor role's aggregation")
	patched := overlay(t, "resources:\n  - ../ate-orchestrator/deploy\n"+snippet)
	shipped := build(t)
	require.Len(t, patched, len(shipped))
	for i, o := range patched {
		if o.GetKind() == "ClusterRole" && o.GetName() == "ate-workerpool-editor" {
			for k := range o.GetLabels() {
				require.NotContains(t, k, "aggregate-to-", "the overlay leaves the label %s", k)
			}
			require.Equal(t, shipped[i].Object["rules"], o.Object["rules"])
			continue
		}
		require.Equal(t, shipped[i].Object, o.Object, "the overlay changed %s %s", o.GetKind(), o.GetName())
	}
}
