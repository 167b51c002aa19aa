package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"ate.dev/orchestrator/test/localstack/servers"
	"ate.dev/orchestrator/test/testenv"
)

// TestMain runs cluster A's API server and the one Temporal server of the
// fleet (testenv); the tests start the other clusters' API servers.
func TestMain(m *testing.M) {
	buildBinaries()
	code := testenv.Main(m, testenv.Options{})
	<-bins.done
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// The worker (built with -tags crashtest, so that ATE_CRASH_AFTER_ACTIVITY
// kills it at an exact point) and the starter, for the tests that run a
// cluster's product as real processes; built once, while the servers start.
var bins struct {
	done            chan struct{}
	dir             string
	worker, starter string
	err             error
}

func buildBinaries() {
	bins.done = make(chan struct{})
	go func() {
		defer close(bins.done)
		root, err := servers.RepoRoot()
		if err != nil {
			bins.err = err
			return
		}
		if bins.dir, err = os.MkdirTemp("", "ate-fleet-bin-"); err != nil {
			bins.err = err
			return
		}
		bins.worker, bins.starter = filepath.Join(bins.dir, "worker"), filepath.Join(bins.dir, "starter")
		for _, args := range [][]string{
			{"build", "-tags", "crashtest", "-o", bins.worker, "./cmd/worker"},
			{"build", "-o", bins.starter, "./cmd/starter"},
		} {
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("go %v: %w\n%s", args, err, out)
				return
			}
		}
	}()
}

// binaries returns the paths of the worker and the starter.
func binaries(t testing.TB) (worker, starter string) {
	t.Helper()
	select {
	case <-bins.done:
	case <-time.After(10 * time.Minute):
		t.Fatal("building the worker and the starter took more than 10 minutes")
	}
	if bins.err != nil {
		t.Fatalf("building the worker and the starter: %v", bins.err)
	}
	return bins.worker, bins.starter
}
