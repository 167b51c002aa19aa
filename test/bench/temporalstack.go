package main

import (
	"context"
	"path/filepath"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// The Temporal servers the bench runs on (-temporal).
const (
	stackDev      = "dev"
	stackPostgres = "postgres"
)

// postgresNote starts the note of rows measured on the PostgreSQL stack,
// which BENCHMARKS.md lists beside the dev server's. Its Temporal CPU is
// temporal-server's alone: PostgreSQL's backends are not counted.
const postgresNote = "temporal-server on PostgreSQL (SQL visibility, 4 shards, default dynamic config)."

// benchTemporal is what the bench needs of either stack's server.
type benchTemporal interface {
	Launch() error
	WaitReady(context.Context) error
	Stop() error
	Address() string
	Namespace() string
}

func newPostgresTemporal(root, logDir string, tuning serverTuning) (*servers.TemporalServer, error) {
	server, sqlTool, err := servers.TemporalServerBinaries(filepath.Join(root, "bin"))
	if err != nil {
		return nil, err
	}
	return servers.NewTemporalServer(servers.TemporalServerConfig{
		ServerBinary: server, SQLToolBinary: sqlTool,
		DynamicConfig: tuning.DynamicConfig,
		LogFile:       filepath.Join(logDir, "temporal.log"),
	})
}
