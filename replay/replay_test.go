package replay

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/options"
	ateworker "ate.dev/orchestrator/worker"
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
			require.NoError(t, ReplayFixture(r, quiet, fx))
		})
	}
}

// TestSwitchesNeedTheirExecution: a switch learns its pool from its
// workflow ID, so its fixture replays only under the execution it was
// recorded from; under the replayer's default ID the workflow fails, and
// the replay with it. Were it not so, the execution files would be
// decoration.
func TestSwitchesNeedTheirExecution(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	n := 0
	for _, fx := range fixtures {
		if fx.Kind != "switch" {
			continue
		}
		n++
		t.Run(fmt.Sprintf("%s.v%d", fx.Name(), fx.Version), func(t *testing.T) {
			r, err := NewReplayer()
			require.NoError(t, err)
			err = r.ReplayWorkflowHistoryFromJSONFile(silent, fx.Path)
			require.Error(t, err, "replayed under the replayer's default workflow ID")
			// The switch fails at once: a nondeterminism error where the
			// history holds commands the failure does not issue; for a
			// history whose only task ends the run (a yield: markers and a
			// continue-as-new), the replayer reports the other ending.
			if !strings.Contains(err.Error(), "TMPRL1100") {
				require.ErrorContains(t, err, "doesn't return the same result as the last event", "replayed under the replayer's default workflow ID")
			}
		})
	}
	require.NotZero(t, n, "no switch fixture")
}

// TestFixtureVersions: every fixture's version is at most Version, so the
// recorder can never label today's code with an older version's name, and
// at least its kind's first version (ParseFixture refuses older ones); each
// kind's current shape is of a version from its first to Version, and
// every kind the recorder writes has fixtures of that shape's version.
func TestFixtureVersions(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.Equal(t, len(workflowTypes), len(firstVersions), "a first version for each kind")
	require.Equal(t, len(workflowTypes), len(shapeVersions), "a shape version for each kind")
	for kind := range workflowTypes {
		require.LessOrEqual(t, firstVersions[kind], shapeVersions[kind], kind)
		require.LessOrEqual(t, shapeVersions[kind], versionNumber(Version), kind)
	}
	shapes := map[string]bool{}
	for _, fx := range fixtures {
		require.LessOrEqual(t, fx.Version, versionNumber(Version), "%s is newer than replay.Version %s", fx.Path, Version)
		require.GreaterOrEqual(t, fx.Version, firstVersions[fx.Kind], "%s is older than the %s corpus", fx.Path, fx.Kind)
		if fx.Version == shapeVersions[fx.Kind] {
			shapes[fx.Kind] = true
		}
	}
	for kind := range workflowTypes {
		require.True(t, shapes[kind], "no %s fixture of v%d, its current shape", kind, shapeVersions[kind])
	}
}

// TestWriteFixtureRefusesToOverwrite: a recorded fixture, and the execution
// kept with it, are never replaced; a fixture is not written without its
// execution, nor one of a retired kind or version.
func TestWriteFixtureRefusesToOverwrite(t *testing.T) {
	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	var src Fixture
	for _, fx := range fixtures {
		if fx.Kind == "switch" {
			src = fx
			break
		}
	}
	require.NotEmpty(t, src.Path, "no switch fixture to copy")
	h, err := ReadHistory(src.Path)
	require.NoError(t, err)
	exec, err := src.Execution()
	require.NoError(t, err)

	dir := t.TempDir()
	path, err := WriteFixture(dir, src.Kind, src.Scenario, exec, h)
	require.NoError(t, err)
	written, err := ParseFixture(path)
	require.NoError(t, err)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	beforeExec, err := os.ReadFile(written.ExecutionPath())
	require.NoError(t, err)
	_, err = WriteFixture(dir, src.Kind, src.Scenario, exec, h)
	require.ErrorIs(t, err, ErrExists)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)
	afterExec, err := os.ReadFile(written.ExecutionPath())
	require.NoError(t, err)
	require.Equal(t, beforeExec, afterExec)

	// A stray execution file blocks its fixture too.
	require.NoError(t, os.Remove(path))
	_, err = WriteFixture(dir, src.Kind, src.Scenario, exec, h)
	require.ErrorIs(t, err, ErrExists)
	require.NoFileExists(t, path)
	require.NoError(t, os.WriteFile(path, before, 0o644))

	// What it wrote is what the SDK's replayer reads, under its execution.
	r, err := NewReplayer()
	require.NoError(t, err)
	require.NoError(t, ReplayFixture(r, quiet, written))
	gotExec, err := written.Execution()
	require.NoError(t, err)
	require.Equal(t, exec, gotExec)

	for _, tc := range []struct {
		name, kind string
		exec       Execution
		want       string
	}{
		{"a fixture without its execution", src.Kind, Execution{}, "keeps the execution"},
		{"a pool fixture", "pool", exec, "a fixture is named <operator|release|rollout|switch>"},
		{"a name that says another workflow", "release", exec, "workflow type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			_, err := WriteFixture(d, tc.kind, "another", tc.exec, h)
			require.ErrorContains(t, err, tc.want)
			left, err := filepath.Glob(filepath.Join(d, "*"))
			require.NoError(t, err)
			require.Empty(t, left, "nothing written")
		})
	}

	// A fixture of a newer version blocks recording under an older one.
	newer := filepath.Join(dir, fmt.Sprintf("switch-later.v%d.json", versionNumber(Version)+1))
	require.NoError(t, os.WriteFile(newer, before, 0o644))
	_, err = WriteFixture(dir, src.Kind, "another", exec, h)
	require.ErrorContains(t, err, "newer code version")
}

// TestReplayerMatchesWorker: the replayer reads histories with what the
// worker writes them with. Both come from one builder; this checks the
// values, so a setting added to one side only fails here.
func TestReplayerMatchesWorker(t *testing.T) {
	w := ateworker.TemporalWorkerOptions()
	r := ReplayerOptions()
	require.Len(t, r.Interceptors, len(w.Interceptors))
	for i := range w.Interceptors {
		require.IsType(t, w.Interceptors[i], r.Interceptors[i], "interceptor %d", i)
	}
	// The client the worker dials leaves the converters and propagators at
	// the SDK's defaults, which is what the replayer uses without them.
	var o options.Options
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	o.BindFlags(fs)
	require.NoError(t, fs.Parse(nil))
	co, err := o.TemporalClientOptions(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, co.DataConverter)
	require.Nil(t, co.FailureConverter)
	require.Empty(t, co.ContextPropagators)
	require.Nil(t, r.DataConverter)
	require.Nil(t, r.FailureConverter)
	require.Empty(t, r.ContextPropagators)
}
