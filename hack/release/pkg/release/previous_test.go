package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// history builds a git repository commit by commit; each commit writes
// CHANGELOG.md with the released versions given, newest first.
type history struct {
	t    *testing.T
	root string
	n    int
}

func newHistory(t *testing.T) *history {
	h := &history{t: t, root: t.TempDir()}
	h.git("init", "-q", "-b", "main")
	return h
}

func (h *history) git(args ...string) string {
	h.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", h.root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(h.t, err, "git %v: %s", args, out)
	return string(out)
}

// commit commits a change, CHANGELOG.md listing released, and returns its hash.
func (h *history) commit(released ...string) string {
	h.t.Helper()
	h.n++
	changelog := "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- change\n\n"
	for _, v := range released {
		changelog += "## [" + v + "] - 2026-12-05\n\n### Added\n\n- things\n\n"
	}
	require.NoError(h.t, os.WriteFile(filepath.Join(h.root, "CHANGELOG.md"), []byte(changelog), 0o644))
	require.NoError(h.t, os.WriteFile(filepath.Join(h.root, "n"), []byte{byte('0' + h.n)}, 0o644))
	h.git("add", "-A")
	h.git("commit", "-q", "-m", "commit")
	out, err := gitOut(context.Background(), h.root, "rev-parse", "HEAD")
	require.NoError(h.t, err)
	return out
}

func TestFindPrevious(t *testing.T) {
	tests := []struct {
		name string
		// build makes the history and returns the commit upgraded to and
		// what FindPrevious must find ("" Version: a plain commit).
		build   func(h *history) (head string, want Previous)
		wantErr string
	}{
		{"before the first release, the commit before", func(h *history) (string, Previous) {
			a := h.commit()
			return h.commit(), Previous{Commit: a}
		}, ""},
		{"a release is not its own predecessor", func(h *history) (string, Previous) {
			a := h.commit()
			r := h.commit("0.1.0")
			h.git("tag", "v0.1.0", r)
			return r, Previous{Commit: a}
		}, ""},
		{"the tagged release", func(h *history) (string, Previous) {
			h.commit()
			r := h.commit("0.1.0")
			h.git("tag", "v0.1.0", r)
			h.commit("0.1.0")
			return h.commit("0.1.0"), Previous{Version: "v0.1.0", Commit: r}
		}, ""},
		{"without tags, the commit that added the release's heading", func(h *history) (string, Previous) {
			h.commit()
			r := h.commit("0.1.0")
			h.commit("0.1.0")
			return h.commit("0.1.0"), Previous{Version: "v0.1.0", Commit: r}
		}, ""},
		{"the newest of two releases", func(h *history) (string, Previous) {
			r1 := h.commit("0.1.0")
			h.git("tag", "v0.1.0", r1)
			h.commit("0.1.0")
			r2 := h.commit("0.2.0", "0.1.0")
			return h.commit("0.2.0", "0.1.0"), Previous{Version: "v0.2.0", Commit: r2}
		}, ""},
		{"a tag on another commit than its heading's is refused", func(h *history) (string, Previous) {
			h.commit()
			h.commit("0.1.0")
			c := h.commit("0.1.0")
			h.git("tag", "v0.1.0", c)
			return h.commit("0.1.0"), Previous{}
		}, "the tag must be on the commit that adds the heading"},
		{"a first commit has nothing before it", func(h *history) (string, Previous) {
			return h.commit(), Previous{}
		}, "has no parent commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(t)
			head, want := tt.build(h)
			got, err := FindPrevious(h.root, head)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}
