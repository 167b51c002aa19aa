package e2e

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{Prometheus: true})) }
