package activities

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"ate.dev/orchestrator/internal/testenv"
)

// The package's tests run on fakes, but for those that need a real
// kube-apiserver (the worker's informer cache, field indexes and selectors
// as the server has them): realKube starts one (internal/testenv, no Temporal)
// on the first call, for the whole package, and TestMain stops it. The
// tests that never call it need no server binaries.
var apiServer struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// temporalServer is the package's Temporal dev server, likewise started on
// first use (realTemporal), for the reads of other clusters' rollouts.
var temporalServer struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

func TestMain(m *testing.M) {
	// As testenv.Main: controller-runtime's log (envtest's and the
	// cache's) to stderr, errors only.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	code := m.Run()
	for _, env := range []*testenv.Env{apiServer.env, temporalServer.env} {
		if env == nil {
			continue
		}
		if code != 0 {
			env.Keep()
			fmt.Fprintf(os.Stderr, "testenv: tests failed; server logs kept in %s\n", filepath.Join(env.Dir, "logs"))
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// realKube is the package's kube-apiserver (with etcd and the CRDs),
// started on first use; it fails the test, saying why, when it cannot be
// (KUBEBUILDER_ASSETS unset, say).
func realKube(t *testing.T) *testenv.Env {
	t.Helper()
	apiServer.once.Do(func() { apiServer.env, apiServer.err = testenv.Start(testenv.Options{NoTemporal: true}) })
	if apiServer.err != nil {
		t.Fatalf("this test needs a kube-apiserver (KUBEBUILDER_ASSETS=$PWD/bin): %v", apiServer.err)
	}
	return apiServer.env
}

// realTemporal is the package's Temporal dev server (no kube-apiserver),
// started on first use; it fails the test, saying why, when it cannot be.
func realTemporal(t *testing.T) *testenv.Env {
	t.Helper()
	temporalServer.once.Do(func() { temporalServer.env, temporalServer.err = testenv.Start(testenv.Options{NoKube: true}) })
	if temporalServer.err != nil {
		t.Fatalf("this test needs a Temporal dev server (ATE_TEMPORAL_CLI=$PWD/bin/temporal): %v", temporalServer.err)
	}
	return temporalServer.env
}
