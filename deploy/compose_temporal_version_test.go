package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serverRequire finds the require line of go.temporal.io/server in a go.mod
// (its single-line or block form).
var serverRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?go\.temporal\.io/server\s+v(\S+)`)

// TestComposeTemporalVersionIsTheTestedOne keeps docker-compose.yaml's
// Temporal server (and admin-tools, whose schema tool must match the
// server's schema) at the version hack/tools/temporal-server pins: that is
// the server the PostgreSQL stack's tests run, so it is the one users of
// the compose file get proven.
func TestComposeTemporalVersionIsTheTestedOne(t *testing.T) {
	root := repoRoot(t)
	gomod := filepath.Join(root, "hack", "tools", "temporal-server", "go.mod")
	b, err := os.ReadFile(gomod)
	require.NoError(t, err)
	m := serverRequire.FindSubmatch(b)
	require.NotNil(t, m, "%s requires no go.temporal.io/server", gomod)
	pinned := string(m[1])

	p := loadCompose(t)
	images := map[string]string{}
	for _, name := range p.ServiceNames() {
		img := service(t, p, name).Image
		if strings.HasPrefix(img, "temporalio/server:") || strings.HasPrefix(img, "temporalio/admin-tools:") {
			images[name] = img
		}
	}
	require.Contains(t, images, "temporal", "docker-compose.yaml has no temporalio/server service named temporal")
	for name, img := range images {
		_, tag, _ := strings.Cut(img, ":")
		require.Equal(t, pinned, tag,
			"service %s runs %s, but the tested server (hack/tools/temporal-server/go.mod) is %s: align them", name, img, pinned)
	}
}
