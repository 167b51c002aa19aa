package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Programs are the orchestrator's binaries that the image carries, each at
// /usr/local/bin/<name> (the paths the Dockerfile and deploy/ use).
var Programs = []string{"worker", "starter", "teardown"}

// BinDir is where the programs live in the image.
const BinDir = "/usr/local/bin"

// Platform is one OS/architecture the release builds for.
type Platform struct {
	OS   string
	Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are the platforms of a release's image index.
var Platforms = []Platform{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}

// LDFlags are the linker flags of a release binary: the version that
// --version prints, set the way the Makefile and the Dockerfile set it, and
// no symbol table or DWARF (as the Dockerfile's production image), which
// keeps the build info that the SBOM is read from.
func LDFlags(version string) string {
	return "-s -w -X ate.dev/orchestrator/internal/version.Version=" + version
}

// BuildEnv is the environment of a release build for p: static binaries
// (no cgo, so no libc in the image), and the baseline instruction sets, so
// that a variable of the caller's environment cannot make the binaries need
// a newer CPU than the platform promises. GOWORK=off builds the product as
// its own module, with its own go.sum, whatever workspace the caller is in
// (`make test` runs in one joining the workshop's modules).
func BuildEnv(p Platform) []string {
	return []string{
		"GOWORK=off",
		"CGO_ENABLED=0",
		"GOOS=" + p.OS,
		"GOARCH=" + p.Arch,
		"GOAMD64=v1",
		"GOARM64=v8.0",
	}
}

// BuildArgs are the go command's arguments of a release build into dir.
// -trimpath and -buildvcs=false keep the binaries free of the build
// machine's paths and of the work tree's state, so that two builds of one
// commit are byte-identical; the revision is in the image's labels instead.
func BuildArgs(version, dir string) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + LDFlags(version), "-o", dir + string(filepath.Separator)}
	for _, p := range Programs {
		args = append(args, "./cmd/"+p)
	}
	return args
}

// BuildBinaries compiles the programs for p from the module at root into
// dir, with the go command on PATH.
func BuildBinaries(ctx context.Context, root, version string, p Platform, dir string, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the %s binaries' directory: %w", p, err)
	}
	cmd := exec.CommandContext(ctx, "go", BuildArgs(version, dir)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), BuildEnv(p)...)
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Fprintf(log, "%s go %v\n", p, cmd.Args[1:])
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build of %v for %s: %w", Programs, p, err)
	}
	return nil
}
