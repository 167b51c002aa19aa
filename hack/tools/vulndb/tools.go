//go:build tools

// Package tools pins the Go vulnerability database, golang.org/x/vulndb: its
// OSV files (data/osv) at this version, and its indexdb command, which
// turns them into the database layout `govulncheck -db` reads. `make
// vulncheck` then runs offline; a newer pseudo-version here is a newer
// snapshot of the database.
package tools

import _ "golang.org/x/vulndb/cmd/indexdb"
