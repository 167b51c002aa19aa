package servers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Module is the module path of the repository root.
const Module = "ate.dev/orchestrator"

// RepoRoot returns the root of the repository: the nearest directory at or
// above the working directory whose go.mod declares Module. (Tests run in
// their package's directory, and hack/tools/* hold go.mod files of their own.)
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above the working directory", Module)
		}
		dir = parent
	}
}

// declaresModule matches go.mod's module line of Module.
var declaresModule = regexp.MustCompile(`(?m)^\s*module\s+` + regexp.QuoteMeta(Module) + `\s*$`).Match

// ErrMissingBinary is wrapped by the errors of FindBinary.
var ErrMissingBinary = errors.New("missing binary")

// FindBinary checks that path is an executable file, and otherwise says how
// to build it. name labels the message; how says where the path came from.
func FindBinary(name, path, how string) (string, error) {
	st, err := os.Stat(path) // follows the bin/ symlink into the tools cache
	if err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return path, nil
	}
	reason := "it is not an executable file"
	if err != nil {
		reason = err.Error()
	}
	return "", fmt.Errorf("%w: %s not found at %s (%s; %s): run `make tools` in the repository root to build it",
		ErrMissingBinary, name, path, how, reason)
}
