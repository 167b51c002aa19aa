// Package docs checks the repository's documentation as a reader meets it:
// every relative link of the README and of docs/ leads to a file of the
// repository (and, with an anchor, to a heading of that file), and the
// README stays short enough to read as an operator's introduction.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// maxReadmeLines bounds README.md: it introduces, runs, installs and operates
// the product and links docs/ for the rest (issue 22 item 5 asked for about
// 400 lines).
const maxReadmeLines = 420

// repoRoot is the repository's root: the directory of the product's
// go.mod, above this package and the test module's own go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	return root
}

// checkedFiles are the documents whose links are checked: the README, every
// markdown file under docs/, and the other READMEs and records a reader
// reaches from them.
func checkedFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "BENCHMARKS.md", "CHANGELOG.md"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "README.md" || !strings.HasSuffix(rel, ".md") {
			return nil
		}
		if strings.HasPrefix(rel, "docs"+string(filepath.Separator)) || filepath.Base(rel) == "README.md" {
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

var (
	// inlineLink is a markdown inline link or image: [text](target).
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// inlineCode is a code span, whose text is not markdown.
	inlineCode = regexp.MustCompile("`[^`]*`")
	// upward is a relative path that climbs directories.
	upward = regexp.MustCompile(`(?:\.\./)+[^\s)\]` + "`" + `'"]*`)
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// notInSlug is what GitHub drops from a heading to make its anchor.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// prose returns the lines of a markdown document outside fenced code blocks.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped
// (code-span backticks too), spaces turned into hyphens.
func slug(title string) string {
	title = strings.ToLower(strings.ReplaceAll(title, "`", ""))
	title = notInSlug.ReplaceAllString(title, "")
	return strings.ReplaceAll(title, " ", "-")
}

// anchors are the anchors of a document's headings, a repeated heading
// numbered as GitHub numbers it.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestLinksResolve: every relative link leads to a file or directory of the
// repository, never outside it, and an anchor to a heading of its target; no
// relative path in the prose climbs out of the repository either.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	texts := map[string]string{}
	read := func(rel string) (string, error) {
		if s, ok := texts[rel]; ok {
			return s, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", err
		}
		texts[rel] = string(b)
		return string(b), nil
	}
	for _, file := range checkedFiles(t, root) {
		text, err := read(file)
		require.NoError(t, err)
		for n, line := range prose(text) {
			for _, m := range upward.FindAllString(line, -1) {
				if rel := filepath.Join(filepath.Dir(file), m); rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Errorf("%s (prose line %d): %s names a path outside the repository", file, n+1, m)
				}
			}
			line = inlineCode.ReplaceAllString(line, "")
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				where := file + ": link " + target + " (prose line " + strconv.Itoa(n+1) + ")"
				path, anchor, _ := strings.Cut(target, "#")
				if filepath.IsAbs(path) {
					t.Errorf("%s: an absolute path", where)
					continue
				}
				rel := file
				if path != "" {
					rel = filepath.Clean(filepath.Join(filepath.Dir(file), path))
					if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
						t.Errorf("%s: leads outside the repository", where)
						continue
					}
					info, err := os.Stat(filepath.Join(root, rel))
					if err != nil {
						t.Errorf("%s: no such file", where)
						continue
					}
					if info.IsDir() {
						if anchor != "" {
							t.Errorf("%s: an anchor into a directory", where)
						}
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(rel, ".md") {
					continue
				}
				targetText, err := read(rel)
				require.NoError(t, err, where)
				if !anchors(targetText)[anchor] {
					t.Errorf("%s: %s has no heading with anchor #%s", where, rel, anchor)
				}
			}
		}
	}
}

// TestReadmeIsShort: the README introduces and links; reference material
// belongs in docs/.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	require.LessOrEqual(t, lines, maxReadmeLines, "README.md has %d lines: move reference material into docs/", lines)
}

// TestSlug pins the anchor rule the link check relies on.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"Trace a pool in the Web UI", "trace-a-pool-in-the-web-ui"},
		{"What it is, and why Temporal", "what-it-is-and-why-temporal"},
		{"Changing a workflow safely: replay tests", "changing-a-workflow-safely-replay-tests"},
		{"The worker (`worker/`, command `cmd/worker`)", "the-worker-worker-command-cmdworker"},
		{"Production Temporal (PostgreSQL)", "production-temporal-postgresql"},
		{"The dev server's settings", "the-dev-servers-settings"},
	} {
		require.Equal(t, tc.want, slug(tc.title), tc.title)
	}
	require.Equal(t, map[string]bool{"a": true, "a-1": true, "b": true}, anchors("# A\n```\n# not a heading\n```\n## A\n## B\n"))
}
