package crashtest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"ate.dev/orchestrator/test/localstack/servers"
	"ate.dev/orchestrator/test/testenv"
)

var (
	soakFor  = flag.Duration("soak", 90*time.Second, "how long TestChaosSoak makes random changes and kills processes")
	soakSeed = flag.Int64("seed", 0, "seed of TestChaosSoak's random changes and kills; 0 picks one from the clock (the seed is printed)")
)

// The worker (built with -tags crashtest, so ATE_CRASH_AFTER_ACTIVITY works)
// and the starter, built once for the package while the servers start.
var bins struct {
	once            sync.Once
	done            chan struct{}
	dir             string
	worker, starter string
	err             error
}

// parallelKills is how many tests run at once: the kill cases each wait
// for the 10s start-to-close timeout of the activity their worker died in,
// so they run side by side (with the other tests that run no starter)
// rather than one after another. Not more: the Temporal dev server's
// SQLite store (modernc.org/sqlite v1.34.1 in the temporal CLI v1.5.1)
// can wedge in SQLITE_INTERRUPT under heavy load, when many requests are
// cancelled mid-transaction (fixed in modernc.org/sqlite v1.44.3).
const parallelKills = 8

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelKills))
	}
	buildBinaries()
	// On the local cluster (controller manager, scheduler, kwok's nodes):
	// the pools' Deployments get pods, and the kills happen with them
	// present.
	code := testenv.Main(m, testenv.Options{PersistTemporal: true, Cluster: true})
	<-bins.done
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// buildBinaries starts building the worker and the starter in the
// background; binaries waits for them.
func buildBinaries() {
	bins.done = make(chan struct{})
	go func() {
		defer close(bins.done)
		root, err := servers.RepoRoot()
		if err != nil {
			bins.err = err
			return
		}
		if bins.dir, err = os.MkdirTemp("", "ate-crashtest-bin-"); err != nil {
			bins.err = err
			return
		}
		bins.worker, bins.starter = filepath.Join(bins.dir, "worker"), filepath.Join(bins.dir, "starter")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, args := range [][]string{
			{"build", "-tags", "crashtest", "-o", bins.worker, "./cmd/worker"},
			{"build", "-o", bins.starter, "./cmd/starter"},
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
		for _, err := range errs {
			if err != nil && bins.err == nil {
				bins.err = err
			}
		}
	}()
}

// binaries returns the paths of the worker and the starter.
func binaries(t testing.TB) (worker, starter string) {
	t.Helper()
	select {
	case <-bins.done:
	case <-time.After(15 * time.Minute):
		t.Fatal("building the worker and the starter took more than 15 minutes")
	}
	if bins.err != nil {
		t.Fatalf("building the worker and the starter: %v", bins.err)
	}
	return bins.worker, bins.starter
}
