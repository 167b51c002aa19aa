//go:build tools

// Package tools pins golangci-lint, the linter `make lint` (and so `make
// verify`) runs with the repository's .golangci.yml.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
