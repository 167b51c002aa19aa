//go:build tools

// Package tools pins workflowcheck, which proves the workflows deterministic.
package tools

import _ "go.temporal.io/sdk/contrib/tools/workflowcheck"
