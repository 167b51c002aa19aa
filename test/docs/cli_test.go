package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliDoc holds every tctl and temporal line operators are told to run;
// test/e2e TestCLILines runs each of them against the stack.
const cliDoc = "docs/operating-with-the-cli.md"

// setupLines are CLI lines of the README that set a Temporal namespace up
// rather than operate the product (the local stack registers the search
// attributes through the API itself).
var setupLines = []string{"temporal operator search-attribute create"}

// TestReadmeCLILinesAreRun: every temporal or tctl command in the README's
// code blocks is a line of the CLI document, so TestCLILines runs it; a
// line added to the README alone fails here.
func TestReadmeCLILinesAreRun(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, cliDoc))
	require.NoError(t, err)
	run := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		run[strings.TrimSpace(l)] = true
	}
	found := 0
	inBlock := false
	for i, l := range strings.Split(string(readme), "\n") {
		line := strings.TrimSpace(l)
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock || !(strings.HasPrefix(line, "temporal ") || strings.HasPrefix(line, "tctl ")) {
			continue
		}
		if isSetup(line) {
			continue
		}
		found++
		require.True(t, run[line], "README.md:%d runs %q, which %s lacks: add it there, where TestCLILines runs it", i+1, line, cliDoc)
	}
	require.Positive(t, found, "the README shows no CLI line")
}

func isSetup(line string) bool {
	for _, p := range setupLines {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
