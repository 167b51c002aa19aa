package fleet

import (
	"os"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/test/crashtest"
)

// TestMain runs cluster A's API server and the one Temporal server of the
// fleet (testenv); the tests start the other clusters' API servers.
func TestMain(m *testing.M) {
	bins = crashtest.BuildBinaries("ate-fleet-bin-")
	code := testenv.Main(m, testenv.Options{})
	bins.Remove()
	os.Exit(code)
}

// bins are the worker (built with -tags crashtest, so that
// ATE_CRASH_AFTER_ACTIVITY kills it at an exact point) and the starter, for
// the tests that run a cluster's product as real processes; built once,
// while the servers start.
var bins *crashtest.Binaries

// binaries returns the paths of the worker and the starter.
func binaries(t testing.TB) (worker, starter string) {
	t.Helper()
	return bins.Paths(t, 10*time.Minute)
}
