package crashtest

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/testenv"
)

var (
	soakFor  = flag.Duration("soak", 90*time.Second, "how long TestChaosSoak makes random changes and kills processes")
	soakSeed = flag.Int64("seed", 0, "seed of TestChaosSoak's random changes and kills; 0 picks one from the clock (the seed is printed)")
)

// bins are the worker and the starter, built once for the package while
// the servers start.
var bins *Binaries

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
	bins = BuildBinaries("ate-crashtest-bin-")
	// On the local cluster (controller manager, scheduler, kwok's nodes):
	// the pools' Deployments get pods, and the kills happen with them
	// present. Its Prometheus is the rollout analysis'.
	code := testenv.Main(m, testenv.Options{PersistTemporal: true, Cluster: true, Prometheus: true})
	bins.Remove()
	os.Exit(code)
}

// binaries returns the paths of the worker and the starter.
func binaries(t testing.TB) (worker, starter string) {
	t.Helper()
	return bins.Paths(t, 15*time.Minute)
}
