package release

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// Previous is what an upgrade to the tree at a commit starts from.
type Previous struct {
	// Version is the release ("v0.1.0"), or "" when there is none before
	// the commit and Commit is merely the one before it.
	Version string
	// Commit is the full hash of the commit the release was cut from.
	Commit string
}

// releasedHeading is a released version's heading in CHANGELOG.md.
var releasedHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - `)

// FindPrevious finds the newest release among the ancestors of head other
// than head itself (a release being cut is not its own predecessor), on
// main's own line (first parents), in the git repository at root.
//
// A release is its vX.Y.Z tag. A clone without tags (a mirror, a fork, a
// CI that clones a branch alone) still finds it: a release is cut by the
// commit that adds its "## [X.Y.Z] - DATE" heading to CHANGELOG.md, and
// that commit is the one the tag names (CHANGELOG.md's steps). Where both
// are present they must agree, so neither can drift silently. Before the
// first release the commit before head stands in, with no Version.
func FindPrevious(root, head string) (Previous, error) {
	ctx, base := context.Background(), head+"~1"
	if _, err := gitOut(ctx, root, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		return Previous{}, fmt.Errorf("%s has no parent commit (a shallow clone needs its history: git fetch --unshallow --tags)", head)
	}
	fromLog, err := releasedByChangelog(ctx, root, base)
	if err != nil {
		return Previous{}, err
	}
	tag, _ := gitOut(ctx, root, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*", "--first-parent", base)
	switch {
	case tag != "":
		commit, err := gitOut(ctx, root, "rev-parse", "--verify", "--quiet", tag+"^{commit}")
		if err != nil {
			return Previous{}, fmt.Errorf("resolving tag %s: %w", tag, err)
		}
		if fromLog.Version == tag && fromLog.Commit != commit {
			return Previous{}, fmt.Errorf("tag %s names commit %s, but CHANGELOG.md's heading of %s was added by commit %s: the tag must be on the commit that adds the heading", tag, commit, tag, fromLog.Commit)
		}
		if fromLog.Version != "" && fromLog.Version != tag && isAncestor(root, commit, fromLog.Commit) {
			return fromLog, nil // a newer release whose tag this clone lacks
		}
		return Previous{Version: tag, Commit: commit}, nil
	case fromLog.Version != "":
		return fromLog, nil
	}
	commit, err := gitOut(ctx, root, "rev-parse", "--verify", base+"^{commit}")
	return Previous{Commit: commit}, err
}

// releasedByChangelog reads CHANGELOG.md as of rev for its newest released
// version and finds the first-parent commit that added its heading.
func releasedByChangelog(ctx context.Context, root, rev string) (Previous, error) {
	changelog, err := gitOut(ctx, root, "show", rev+":CHANGELOG.md")
	if err != nil {
		return Previous{}, nil // no changelog, no release
	}
	m := releasedHeading.FindStringSubmatch(changelog)
	if m == nil {
		return Previous{}, nil
	}
	// -S counts the literal string per commit; the oldest commit that
	// changed its count is the one that added it.
	log, err := gitOut(ctx, root, "log", "--first-parent", "--format=%H", "-S## ["+m[1]+"] - ", rev, "--", "CHANGELOG.md")
	if err != nil {
		return Previous{}, err
	}
	commits := strings.Fields(log)
	if len(commits) == 0 {
		return Previous{}, fmt.Errorf("CHANGELOG.md at %s lists release %s, but no commit on its first-parent line added the heading (a shallow clone?)", rev, m[1])
	}
	return Previous{Version: "v" + m[1], Commit: commits[len(commits)-1]}, nil
}

// isAncestor reports whether commit a is an ancestor of commit b.
func isAncestor(root, a, b string) bool {
	return exec.Command("git", "-C", root, "merge-base", "--is-ancestor", a, b).Run() == nil
}

// gitOut runs git in root and returns its trimmed standard output.
func gitOut(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
