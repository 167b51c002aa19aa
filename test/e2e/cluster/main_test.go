package cluster

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/testenv"
)

// One stack for the package, with the real cluster around the API server:
// the controller manager, the scheduler and kwok's fleet act on the
// Deployments the product applies.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{Cluster: true})) }
