package testenv

import (
	"fmt"
	"os"

	"ate.dev/orchestrator/test/localstack"
)

// The Temporal stacks a test package can run on (Options.TemporalStack,
// $ATE_TEMPORAL_STACK).
const (
	// StackDev is the temporal CLI's dev server: one process, one history
	// shard, SQLite. Fast to start; what most packages run on.
	StackDev = string(localstack.TemporalDev)
	// StackPostgres is temporal-server (hack/tools/temporal-server) on a
	// PostgreSQL started from Debian's packages, with SQL visibility and 4
	// history shards: the server docker-compose.yaml runs in production.
	// Its state is always persistent (it survives KillTemporal); it has no
	// Web UI.
	StackPostgres = string(localstack.TemporalPostgres)
)

func stackOf(opts Options) (string, error) {
	s := opts.TemporalStack
	if s == "" {
		s = os.Getenv("ATE_TEMPORAL_STACK")
	}
	switch s {
	case "", StackDev:
		return StackDev, nil
	case StackPostgres:
		if opts.TemporalUI {
			return "", fmt.Errorf("the %s Temporal stack has no Web UI", s)
		}
		return s, nil
	default:
		return "", fmt.Errorf("unknown Temporal stack %q (want %q or %q)", s, StackDev, StackPostgres)
	}
}
