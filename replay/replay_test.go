package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/crashhook"
)

// TestReplay replays every recorded history with the current workflow code,
// registered as the worker registers it. A failure means the code no longer
// issues the commands the history holds: a worker running it would fail the
// workflow tasks of every open workflow of that kind. Gate the change with
// workflow.GetVersion (see README.md).
func TestReplay(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.NotEmpty(t, fixtures, "no fixtures in %s", Dir)
	for _, fx := range fixtures {
		t.Run(fmt.Sprintf("%s.v%d", fx.Name(), fx.Version), func(t *testing.T) {
			r, err := NewReplayer()
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(quiet, fx.Path))
		})
	}
}

// TestFixtureVersions: every fixture's version is at most Version, so the
// recorder can never label today's code with an older version's name.
func TestFixtureVersions(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	for _, fx := range fixtures {
		require.LessOrEqual(t, fx.Version, versionNumber(Version), "%s is newer than replay.Version %s", fx.Path, Version)
	}
}

// TestWriteFixtureRefusesToOverwrite: a recorded fixture is never replaced.
func TestWriteFixtureRefusesToOverwrite(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	src := fixtures[0]
	h, err := ReadHistory(src.Path)
	require.NoError(t, err)

	dir := t.TempDir()
	path, err := WriteFixture(dir, src.Kind, src.Scenario, h)
	require.NoError(t, err)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = WriteFixture(dir, src.Kind, src.Scenario, h)
	require.ErrorIs(t, err, ErrExists)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)

	// What it wrote is what the SDK's replayer reads.
	r, err := NewReplayer()
	require.NoError(t, err)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(quiet, path))

	// A fixture of a newer version blocks recording under an older one.
	newer := filepath.Join(dir, fmt.Sprintf("pool-later.v%d.json", versionNumber(Version)+1))
	require.NoError(t, os.WriteFile(newer, before, 0o644))
	_, err = WriteFixture(dir, src.Kind, "another", h)
	require.ErrorContains(t, err, "newer code version")

	// The name must say which workflow the history is of.
	other := "switch"
	if src.Kind == "switch" {
		other = "pool"
	}
	_, err = WriteFixture(t.TempDir(), other, src.Scenario, h)
	require.ErrorContains(t, err, "workflow type")
}

// TestReplayerMatchesWorker is a tripwire: ReplayerOptions must give the
// replayer the worker's data converter and interceptors. It reads the
// worker's source and fails when it configures one of them in a way this
// test does not know to be shared with ReplayerOptions.
func TestReplayerMatchesWorker(t *testing.T) {
	configures := regexp.MustCompile(`\b(DataConverter|FailureConverter|PayloadCodec|ContextPropagators|Interceptors|Plugins)\b`)
	// What the worker configures that ReplayerOptions shares.
	shared := []string{"Interceptors: crashhook.Interceptors()"}
	for _, dir := range []string{"../worker", "../internal/workerapp", "../internal/options"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			text := string(src)
			for _, s := range shared {
				text = strings.ReplaceAll(text, s, "")
			}
			if m := configures.FindString(text); m != "" {
				t.Errorf("%s configures %s: make replay.ReplayerOptions use the same value (shared with the worker), then list it in this test", f, m)
			}
		}
	}
	require.Len(t, ReplayerOptions().Interceptors, len(crashhook.Interceptors()))
}
