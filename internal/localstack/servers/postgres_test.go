package servers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPostgresStartsAndIsRemoved: the harness's PostgreSQL accepts
// connections on its port (as a non-root user when run as root) and Stop
// leaves neither a process nor a data directory behind.
func TestPostgresStartsAndIsRemoved(t *testing.T) {
	log := filepath.Join(t.TempDir(), "postgres.log")
	pg, err := StartPostgres(context.Background(), log)
	require.NoError(t, err)
	dir := pg.dir
	require.NoError(t, probePostgres(context.Background(), pg.Address()))
	if os.Geteuid() == 0 {
		st, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION"))
		require.NoError(t, err)
		require.NotZero(t, ownerUID(st), "the data directory of a server started by root must belong to another user")
	}
	require.NoError(t, pg.Stop())
	require.Error(t, probePostgres(context.Background(), pg.Address()), "still serving after Stop")
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "data directory %s left behind: %v", dir, err)
}
