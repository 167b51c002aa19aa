package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	tclient "go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/localstack"
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

// startStack starts n's servers in dir: the Temporal server of
// -temporal (the dev server with the settings `make dev` and the tests run
// it with, servers.DevServerPragmas and DevServerDynamicConfig; or
// temporal-server on PostgreSQL at its defaults), etcd with fsync and
// kube-apiserver with the CRDs, and with -cluster the local cluster
// around them.
func startStack(ctx context.Context, cfg config, root, dir string, n int, log *slog.Logger) (_ *stack, err error) {
	s := &stack{}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	opts := localstack.Options{
		Dir: dir, Root: root,
		DurableEtcd: true, // as `make dev`
		Temporal:    cfg.temporal,
		Cluster:     cfg.cluster,
	}
	if opts.Temporal == localstack.TemporalDev {
		// A database file, as `make dev` keeps: in memory is faster, and
		// not what users run.
		opts.TemporalDBFile = filepath.Join(dir, "temporal.db")
	}
	if cfg.podReplicas > 0 {
		opts.Fleet, _ = benchFleet(n, cfg.podReplicas)
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
	log.Info("servers up", "temporal", s.temporal.Address(), "apiserver", s.servers.Kube.RestConfig.Host, "dir", dir)
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

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
