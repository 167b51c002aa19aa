package image

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"ate.dev/orchestrator/internal/testenv"
)

func TestMain(m *testing.M) {
	if missing := missingRuntime(); missing != "" {
		// Each test skips (or, under CI, fails) saying what is missing:
		// no servers to start for them.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "ate-image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pkgDir = dir
	// The stand-in image (when there is no release archive) builds while
	// the servers start.
	prepareArchive(dir)
	code := testenv.Main(m, testenv.Options{})
	<-archive.done
	if err := finish(dir); err != nil {
		fmt.Fprintf(os.Stderr, "image: cleaning up: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// finish removes every container left in the package's podman store (a
// test's cleanup has removed its own), then the store and the stand-in.
func finish(dir string) error {
	store := filepath.Join(dir, "podman")
	if _, err := os.Stat(store); err == nil {
		p, err := newPodman(store)
		if err != nil {
			return err
		}
		if err := p.removeAll(); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}
