package testenv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var current *Env

// Main is for TestMain: it starts the environment once for the package,
// runs the tests, and always stops it. It returns the exit code for
// os.Exit. When tests fail it keeps Env.Dir and prints where the server
// logs are. Tests get the environment from Current.
//
// It sends controller-runtime's log (envtest's included) to stderr, errors
// only; a package that wants more may call ctrllog.SetLogger after Main has
// started.
func Main(m *testing.M, opts Options) (code int) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	current = env
	defer func() {
		current = nil
		if code != 0 {
			env.Keep()
			fmt.Fprintf(os.Stderr, "testenv: tests failed; server logs kept in %s\n", filepath.Join(env.Dir, "logs"))
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}()
	return m.Run()
}

// Current returns the environment Main started. It panics outside Main,
// where there is none.
func Current() *Env {
	if current == nil {
		panic("testenv.Current: no environment; call testenv.Main from TestMain")
	}
	return current
}
