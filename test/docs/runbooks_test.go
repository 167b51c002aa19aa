package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/deploy/monitoring"
)

// alertRunbooks are the alerts of deploy/monitoring/alerts.yaml, each with its
// runbook_url.
func alertRunbooks(t *testing.T) map[string]string {
	t.Helper()
	groups, err := monitoring.Rules()
	require.NoError(t, err)
	out := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Annotations["runbook_url"]
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestAlertRunbooksResolve: every alert's runbook_url is a path of the
// repository with an anchor, and the anchor is the heading of the alert's
// own section; every section of docs/runbooks.md is an alert's.
func TestAlertRunbooksResolve(t *testing.T) {
	root := repoRoot(t)
	sections := map[string]bool{}
	for name, url := range alertRunbooks(t) {
		require.NotEmpty(t, url, "alert %s has no runbook_url", name)
		require.NotContains(t, url, "://", "alert %s: the runbook_url is relative to the repository's root", name)
		path, anchor, ok := strings.Cut(url, "#")
		require.True(t, ok, "alert %s: runbook_url %s has no anchor", name, url)
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		require.NoError(t, err, "alert %s: runbook_url %s", name, url)
		require.True(t, anchors(string(text))[anchor], "alert %s: %s has no heading with anchor #%s", name, path, anchor)
		require.Equal(t, slug(name), anchor, "alert %s: its runbook is the section named after it", name)
		sections[name] = true
	}
	text, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	require.NoError(t, err)
	for _, line := range prose(string(text)) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			require.True(t, sections[strings.TrimSpace(h)], "docs/runbooks.md has a section %q, which is no alert of alerts.yaml", h)
		}
	}
}

var camelCase = regexp.MustCompile(`\b[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+\b`)

// TestAlertsSpeakTheDocumentedVocabulary: every CamelCase name the alerts'
// texts use, and every one the runbooks write as a code span of its own (event and condition reasons,
// workflow types, search attributes, steps) is one the rest of the
// documentation uses too, so that an alert never sends an operator after
// an event reason the product never records.
func TestAlertsSpeakTheDocumentedVocabulary(t *testing.T) {
	root := repoRoot(t)
	var documented strings.Builder
	for _, f := range checkedFiles(t, root) {
		// Not the runbooks themselves, nor the changelog, which names
		// what was removed.
		if f == filepath.Join("docs", "runbooks.md") || f == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		documented.Write(b)
	}
	// Temporal's own names: built-in search attributes, which visibility
	// queries use, and the SDK's failure_reason of a non-determinism.
	temporal := []string{"ExecutionStatus", "WorkflowType", "WorkflowId", "StartTime", "CloseTime", "NonDeterminismError"}
	known := func(w string) bool { return slices.Contains(temporal, w) || strings.Contains(documented.String(), w) }
	require.False(t, known("ConfigRolledBack"), "the documentation names an event reason ConfigRolledBack")

	groups, err := monitoring.Rules()
	require.NoError(t, err)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			for key, text := range r.Annotations {
				for _, w := range camelCase.FindAllString(text, -1) {
					require.True(t, known(w), "alert %s, annotation %s, names %s, which no document names", r.Alert, key, w)
				}
			}
		}
	}
	runbooks, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	require.NoError(t, err)
	var names []string
	// Names in code spans of their own, as reasons are written.
	for _, span := range inlineCode.FindAllString(strings.Join(prose(string(runbooks)), "\n"), -1) {
		w := strings.Trim(span, "`")
		// (Go tests, TestXxx, are named where they are.)
		if camelCase.FindString(w) == w && !strings.HasPrefix(w, "Test") && !slices.Contains(names, w) {
			names = append(names, w)
		}
	}
	require.Contains(t, names, "SandboxConfigNotFound", "the vocabulary check found no reason in docs/runbooks.md")
	for _, w := range names {
		require.True(t, known(w), "docs/runbooks.md names `%s`, which no other document names", w)
	}
}
