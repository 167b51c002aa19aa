//go:build tools

// Package tools pins the Temporal server (cmd/server, built as
// temporal-server) and its SQL schema tool (cmd/tools/sql, built as
// temporal-sql-tool): the production-shaped server the PostgreSQL stack runs,
// at the version docker-compose.yaml names.
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
