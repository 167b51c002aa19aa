package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"

	tclient "go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/test/localstack"
	"ate.dev/orchestrator/test/localstack/cluster"
	"ate.dev/orchestrator/test/localstack/servers"
)

// stack is one run's servers, started by localstack as `make dev` starts
// them (Temporal dev server on a SQLite file with WAL and
// synchronous=normal, etcd with fsync, kube-apiserver with the CRDs), in a
// directory of its own, plus the bench's clients of them.
type stack struct {
	servers    *localstack.Stack
	temporal   localstack.TemporalServer
	kubeconfig string

	// rest counts every request the bench itself makes, so that the
	// product's share of the API server's counters can be told apart.
	rest    *rest.Config
	own     *requestCounter
	kc      client.Client
	cs      kubernetes.Interface
	tc      tclient.Client
	metrics kubernetes.Interface // uncounted: scrapes /metrics, a non-resource URL
}

// serverTuning is the Temporal server's configuration for the bench: by
// default the dev server's that `make dev` and the tests run
// (test/localstack/servers: DevServerPragmas, DevServerDynamicConfig;
// BENCHMARKS.md tells what each value is worth).
type serverTuning struct {
	Stack         localstack.Flavour
	Binary        string // the temporal CLI; default bin/temporal
	Pragmas       []string
	DynamicConfig map[string]string
	// Cluster runs the local cluster around the API server
	// (localstack.Options.Cluster), with Fleet's nodes (nil: the default
	// fleet).
	Cluster bool
	Fleet   []cluster.NodeGroup
}

// defaultTuning is the dev server's settings; without tuned, its SQLite
// pragmas only.
func defaultTuning(tuned bool) serverTuning {
	t := serverTuning{Stack: localstack.TemporalDev, Pragmas: append([]string(nil), servers.DevServerPragmas...)}
	if tuned {
		t.DynamicConfig = servers.DevServerDynamicConfig()
	}
	return t
}

func startStack(ctx context.Context, root, dir string, tuning serverTuning, log *slog.Logger) (_ *stack, err error) {
	s := &stack{}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	opts := localstack.Options{
		Dir: dir, Root: root,
		DurableEtcd: true, // as `make dev`
		Temporal:    tuning.Stack,
		TemporalCLI: tuning.Binary,
		// A database file, as `make dev` keeps: in memory is faster, and
		// not what users run.
		TemporalDBFile: filepath.Join(dir, "temporal.db"),
		SQLitePragmas:  tuning.Pragmas,
		DynamicConfig:  tuning.DynamicConfig,
		Cluster:        tuning.Cluster,
		Fleet:          tuning.Fleet,
	}
	if s.servers, err = localstack.Start(ctx, opts); err != nil {
		return nil, err
	}
	s.temporal, s.kubeconfig = s.servers.Temporal, s.servers.KubeconfigPath

	// The bench's clients: no client-side rate limit, as the product's.
	s.own = newRequestCounter()
	s.rest = rest.CopyConfig(s.servers.Kube.RestConfig)
	s.rest.QPS = -1
	s.rest.Wrap(s.own.wrap)
	if s.kc, err = client.New(s.rest, client.Options{Scheme: kube.Scheme}); err != nil {
		return nil, err
	}
	if s.cs, err = kubernetes.NewForConfig(s.rest); err != nil {
		return nil, err
	}
	plain := rest.CopyConfig(s.servers.Kube.RestConfig)
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
	log.Info("servers up", "temporal", s.temporal.Address(), "apiserver", s.servers.Kube.RestConfig.Host, "dir", dir,
		"temporalFlags", strings.Join(append(tuning.Pragmas, mapPairs(tuning.DynamicConfig)...), " "))
	return s, nil
}

// stop stops everything the stack started; it is safe on a half-started one.
func (s *stack) stop() error {
	if s.tc != nil {
		s.tc.Close()
	}
	if s.servers == nil {
		return nil
	}
	return s.servers.Stop()
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
