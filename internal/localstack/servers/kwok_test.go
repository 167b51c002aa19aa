package servers

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// NewKwok writes every embedded stage into kwok's configuration, and the
// node stages a NotReady node must not match say so.
func TestKwokConfigHasTheStages(t *testing.T) {
	dir := t.TempDir()
	_, err := NewKwok("kwok", dir, "kubeconfig", "")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "kwok.yaml"))
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^kind: Stage\nmetadata:\n  name: (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
	}
	require.ElementsMatch(t, []string{
		"node-heartbeat-with-lease", "node-initialize", "node-not-ready",
		"pod-complete", "pod-delete", "pod-ready",
	}, names)
	selects := regexp.MustCompile(`(?m)^    - key: '\.metadata\.labels\["` + regexp.QuoteMeta(NotReadyLabel) + `"\]'$`)
	require.Len(t, selects.FindAllString(string(b), -1), 3, "node-initialize and the heartbeat exclude, node-not-ready selects, the label")
}
