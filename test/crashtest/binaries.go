package crashtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// Binaries are the worker (built with -tags crashtest, so that
// ATE_CRASH_AFTER_ACTIVITY kills it at an exact point) and the starter,
// built once for a test package, in the background while its servers
// start.
type Binaries struct {
	done            chan struct{}
	dir             string
	worker, starter string
	err             error
}

// BuildBinaries starts building both into a new temporary directory whose
// name begins with dirPrefix; Paths waits for them, Remove deletes them.
func BuildBinaries(dirPrefix string) *Binaries {
	b := &Binaries{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		root, err := servers.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		if b.dir, err = os.MkdirTemp("", dirPrefix); err != nil {
			b.err = err
			return
		}
		b.worker, b.starter = filepath.Join(b.dir, "worker"), filepath.Join(b.dir, "starter")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, args := range [][]string{
			{"build", "-tags", "crashtest", "-o", b.worker, "./cmd/worker"},
			{"build", "-o", b.starter, "./cmd/starter"},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("go", args...)
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("go %v: %w\n%s", args, err, out)
				}
			}()
		}
		wg.Wait()
		b.err = errors.Join(errs...)
	}()
	return b
}

// Paths returns the paths of the worker and the starter once built, and
// fails t if the build failed or took longer than bound.
func (b *Binaries) Paths(t testing.TB, bound time.Duration) (worker, starter string) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(bound):
		t.Fatalf("building the worker and the starter took more than %s", bound)
	}
	if b.err != nil {
		t.Fatalf("building the worker and the starter: %v", b.err)
	}
	return b.worker, b.starter
}

// Remove waits for the build to end and deletes what it built.
func (b *Binaries) Remove() {
	<-b.done
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
