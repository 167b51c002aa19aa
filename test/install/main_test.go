package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/testenv"
)

// One stack for the package: the local cluster with no CRD installed (the
// install applies them; testenv's default would install deploy/crds), and
// the Temporal dev server with the namespace and the search attributes
// registered, the prerequisite docs/install.md names.
func TestMain(m *testing.M) {
	noCRDs, err := os.MkdirTemp("", "ate-install-nocrds-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	current.start("")
	code := testenv.Main(m, testenv.Options{Cluster: true, CRDDirs: []string{noCRDs}})
	<-current.done
	_ = os.RemoveAll(current.dir)
	_ = os.RemoveAll(noCRDs)
	os.Exit(code)
}

// binaries are the worker, the starter and teardown built from one tree.
type binaries struct {
	done                      chan struct{}
	dir                       string
	worker, starter, teardown string
	err                       error
}

// current are the binaries of this tree, built while the servers start.
var current = &binaries{}

// start builds the binaries of the tree at src ("" is this repository) in
// the background.
func (b *binaries) start(src string) {
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		b.err = b.build(src)
	}()
}

func (b *binaries) build(src string) error {
	if src == "" {
		root, err := servers.RepoRoot()
		if err != nil {
			return err
		}
		src = root
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "ate-install-bin-"); err != nil {
		return err
	}
	b.worker, b.starter, b.teardown = filepath.Join(b.dir, "worker"), filepath.Join(b.dir, "starter"), filepath.Join(b.dir, "teardown")
	// One go build of the three: the compile shared. Without -trimpath,
	// as the other tests build, so the dependencies come from the cache.
	cmd := exec.Command("go", "build", "-o", b.dir+"/", "./cmd/worker", "./cmd/starter", "./cmd/teardown")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %w\n%s", src, err, out)
	}
	return nil
}

// wait returns once the binaries are built, failing the test if they
// could not be.
func (b *binaries) wait(t testing.TB) *binaries {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(15 * time.Minute):
		t.Fatal("building the worker, the starter and teardown took more than 15 minutes")
	}
	if b.err != nil {
		t.Fatalf("building the binaries: %v", b.err)
	}
	return b
}
