// Package ops tests the operator's kit against the real product: the
// README's Web UI story in a real browser (headless Chromium), and the
// Grafana dashboard and alert rules of deploy/monitoring against the
// metrics the worker and the starter export. Its servers run the Temporal
// Web UI, which the other packages do not start.
package ops

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/test/crashtest"
)

// bins are the worker and the starter programs, built while the servers
// start, for the test that scrapes their own /metrics (the worker built
// with -tags crashtest, which only adds a kill hook its environment
// leaves off).
var bins *crashtest.Binaries

func TestMain(m *testing.M) {
	bins = crashtest.BuildBinaries("ate-ops-bin-")
	code := testenv.Main(m, testenv.Options{TemporalUI: true, TemporalDynamicConfig: map[string]string{
		// Idle long polls return after 5 s instead of a minute, so that the
		// empty-poll counter the alert ATEWorkerNotPolling reads exists soon.
		"matching.longPollExpirationInterval": `"5s"`,
	}})
	bins.Remove()
	os.Exit(code)
}
