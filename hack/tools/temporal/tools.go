//go:build tools

// Package tools pins the Temporal CLI, whose `server start-dev` is the
// local Temporal server with the Web UI used by `make dev` and the tests.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"
