package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	tclient "go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// stack is one run's servers, started as `make dev` starts them (Temporal
// dev server on a SQLite file with WAL and synchronous=normal, etcd with
// fsync, kube-apiserver with the CRDs), in a directory of its own, plus the
// bench's clients of them.
type stack struct {
	dir        string
	temporal   benchTemporal
	kube       *servers.Kube
	kubeconfig string
	logs       []*os.File

	// rest counts every request the bench itself makes, so that the
	// product's share of the API server's counters can be told apart.
	rest    *rest.Config
	own     *requestCounter
	kc      client.Client
	cs      kubernetes.Interface
	tc      tclient.Client
	metrics kubernetes.Interface // uncounted: scrapes /metrics, a non-resource URL
}

// serverTuning is the dev server's configuration for the bench: by
// default the one `make dev` and the tests run (internal/localstack/servers:
// DevServerPragmas, DevServerDynamicConfig; BENCHMARKS.md tells what each
// value is worth).
type serverTuning struct {
	Stack         string // stackDev (default) or stackPostgres
	Binary        string // the temporal CLI; default bin/temporal
	Pragmas       []string
	DynamicConfig map[string]string
}

// defaultTuning is the dev server's settings; without tuned, its SQLite
// pragmas only.
func defaultTuning(tuned bool) serverTuning {
	t := serverTuning{Pragmas: append([]string(nil), servers.DevServerPragmas...)}
	if tuned {
		t.DynamicConfig = servers.DevServerDynamicConfig()
	}
	return t
}

func startStack(ctx context.Context, root, dir string, tuning serverTuning, log *slog.Logger) (_ *stack, err error) {
	s := &stack{dir: dir}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	bin := func(name string) (string, error) {
		return servers.FindBinary(name, filepath.Join(root, "bin", name), "from the repository's bin/")
	}
	temporalBin := tuning.Binary
	if temporalBin == "" {
		if temporalBin, err = bin("temporal"); err != nil {
			return nil, err
		}
	}
	etcdBin, err := bin("etcd")
	if err != nil {
		return nil, err
	}
	apiServerBin, err := bin("kube-apiserver")
	if err != nil {
		return nil, err
	}
	if tuning.Stack == stackPostgres {
		t, err := newPostgresTemporal(root, logDir, tuning)
		if err != nil {
			return nil, err
		}
		s.temporal = t
	} else {
		t, err := servers.NewTemporal(servers.TemporalConfig{
			Binary:        temporalBin,
			DBFile:        filepath.Join(dir, "temporal.db"),
			SQLitePragmas: tuning.Pragmas,
			DynamicConfig: tuning.DynamicConfig,
			LogFile:       filepath.Join(logDir, "temporal.log"),
		})
		if err != nil {
			return nil, err
		}
		s.temporal = t
	}
	if err := s.temporal.Launch(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() { ready <- s.temporal.WaitReady(ctx) }()

	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(logDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			s.logs = append(s.logs, f)
		}
		return f, err
	}
	etcdLog, err := open("etcd.log")
	if err != nil {
		return nil, err
	}
	apiLog, err := open("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	s.kube, err = servers.StartKube(servers.KubeConfig{
		EtcdBinary: etcdBin, APIServerBinary: apiServerBin,
		Dir:         filepath.Join(dir, "kube"),
		DurableEtcd: true, // as `make dev`
		CRDDirs:     []string{filepath.Join(root, "deploy", "crds")},
		Scheme:      servers.NewScheme(),
		EtcdLog:     etcdLog, APIServerLog: apiLog,
	})
	if err != nil {
		<-ready
		return nil, fmt.Errorf("%w (logs in %s)", err, logDir)
	}
	if err := <-ready; err != nil {
		return nil, err
	}
	s.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, s.kube.KubeConfig, 0o600); err != nil {
		return nil, err
	}

	// The bench's clients: no client-side rate limit, as the product's.
	s.own = newRequestCounter()
	s.rest = rest.CopyConfig(s.kube.RestConfig)
	s.rest.QPS = -1
	s.rest.Wrap(s.own.wrap)
	if s.kc, err = client.New(s.rest, client.Options{Scheme: kube.Scheme}); err != nil {
		return nil, err
	}
	if s.cs, err = kubernetes.NewForConfig(s.rest); err != nil {
		return nil, err
	}
	plain := rest.CopyConfig(s.kube.RestConfig)
	plain.QPS = -1
	if s.metrics, err = kubernetes.NewForConfig(plain); err != nil {
		return nil, err
	}
	s.tc, err = tclient.DialContext(ctx, tclient.Options{
		HostPort: s.temporal.Address(), Namespace: s.temporal.Namespace(),
		Logger: quietLogger(),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to the Temporal server: %w", err)
	}
	log.Info("servers up", "temporal", s.temporal.Address(), "apiserver", s.kube.RestConfig.Host, "dir", dir,
		"temporalFlags", strings.Join(append(tuning.Pragmas, mapPairs(tuning.DynamicConfig)...), " "))
	return s, nil
}

// stop stops everything the stack started; it is safe on a half-started one.
func (s *stack) stop() error {
	var errs []error
	if s.tc != nil {
		s.tc.Close()
	}
	if s.temporal != nil {
		errs = append(errs, s.temporal.Stop())
		if c, ok := s.temporal.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	if s.kube != nil {
		errs = append(errs, s.kube.Stop())
	}
	for _, f := range s.logs {
		_ = f.Close()
	}
	return errors.Join(errs...)
}

// mapPairs renders dynamic config values as the server's flags show them.
func mapPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
