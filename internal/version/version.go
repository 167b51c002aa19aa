// Package version is the version of the orchestrator's binaries, so that an
// operator can tell which build a pod runs (`worker --version`) and match it
// to CHANGELOG.md and an image tag.
//
// The Makefile and the Dockerfile set it at link time from
// `git describe --tags --always --dirty`:
//
//	go build -ldflags "-X ate.dev/orchestrator/internal/version.Version=$(git describe --tags --always --dirty)" ./cmd/worker
package version

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// Version is set with -ldflags -X; empty in a plain `go build` or `go run`.
var Version string

// Get returns Version when the build set it. Otherwise it falls back to
// what the go command stamped: the module version it derived from the VCS
// (e.g. v0.0.0-20261201095959-848c611abcde+dirty), which a plain `go build`
// in a clone has, and "dev" where there is none (`go run`, a build outside
// a clone, such as a Docker build without the build argument).
func Get() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// String is what --version prints: the program's name and its version.
func String(program string) string { return program + " " + Get() }

// Flag defines --version on fs. After fs.Parse, call the returned function:
// when --version was given it prints String(program) to w and reports true,
// and the caller exits 0 without starting anything.
func Flag(fs *flag.FlagSet, program string) func(w io.Writer) bool {
	show := fs.Bool("version", false, "print the version and exit")
	return func(w io.Writer) bool {
		if *show {
			fmt.Fprintln(w, String(program))
		}
		return *show
	}
}
