package main

import (
	"context"
	"fmt"
	"path/filepath"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// temporalServer is what the stack needs of either Temporal server.
type temporalServer interface {
	Launch() error
	WaitReady(context.Context) error
	Stop() error
	Address() string
	UIAddress() string
	Done() <-chan struct{}
	Err() error
}

func (s *stack) newTemporal(root, state, logDir, temporalBin string) (temporalServer, error) {
	logFile := filepath.Join(logDir, "temporal.log")
	switch s.cfg.temporalStack {
	case "dev":
		t, err := servers.NewTemporal(servers.TemporalConfig{
			Binary: temporalBin, Port: s.cfg.temporalPort, UI: true, UIPort: s.cfg.uiPort,
			DBFile: filepath.Join(state, "temporal.db"),
			// WAL: the UI's reads do not block the server's writes; NORMAL sync
			// is durable across process crashes (not power loss), and fast.
			// The dynamic config is what `make bench` measures the product on.
			SQLitePragmas: servers.DevServerPragmas,
			DynamicConfig: servers.DevServerDynamicConfig(),
			Namespace:     s.cfg.namespace,
			LogFile:       logFile,
		})
		if err != nil { // no typed nil in the interface: shutdown would call it
			return nil, err
		}
		return t, nil
	case "postgres":
		server, sqlTool, err := servers.TemporalServerBinaries(filepath.Join(root, "bin"))
		if err != nil {
			return nil, err
		}
		t, err := servers.NewTemporalServer(servers.TemporalServerConfig{
			ServerBinary: server, SQLToolBinary: sqlTool,
			Port: s.cfg.temporalPort, Namespace: s.cfg.namespace,
			LogFile: logFile,
		})
		if err != nil {
			return nil, err
		}
		return t, nil
	default:
		return nil, fmt.Errorf("-temporal %q: want dev or postgres", s.cfg.temporalStack)
	}
}
