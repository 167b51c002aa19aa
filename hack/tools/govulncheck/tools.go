//go:build tools

// Package tools pins govulncheck, which `make vulncheck` runs against the
// snapshot of the Go vulnerability database that hack/tools/vulndb pins.
package tools

import _ "golang.org/x/vuln/cmd/govulncheck"
