// Package workerapp runs the Temporal worker: it hosts the workflows and the
// activities, the only code that writes to the API server.
package workerapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/workflows"
)

// Config is what the worker needs.
type Config struct {
	Rest      *rest.Config
	Temporal  client.Client
	TaskQueue string
	// Instance names this worker in events; the host name by default.
	Instance string
	// Worker tunes the Temporal worker; zero values take the SDK defaults.
	Worker worker.Options
	Log    *slog.Logger
}

// Run starts the worker and blocks until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	acts, err := NewActivities(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Worker.WorkerStopTimeout == 0 {
		// Let activities in flight report their completion on a graceful
		// stop (SIGTERM), rather than have them retried after their timeout.
		cfg.Worker.WorkerStopTimeout = 10 * time.Second
	}
	w := worker.New(cfg.Temporal, cfg.TaskQueue, cfg.Worker)
	workflows.RegisterWorkflows(w)
	workflows.RegisterActivities(w, acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the Temporal worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	cfg.Log.Info("worker running", "taskQueue", cfg.TaskQueue, "instance", cfg.Instance)
	<-ctx.Done()
	w.Stop()
	return nil
}

// NewActivities builds the activities with their clients, and starts and
// syncs the cache of WorkerPools the release workflow asks first. The cache
// stops with ctx.
func NewActivities(ctx context.Context, cfg Config) (*activities.Activities, error) {
	live, err := kube.LiveClient(cfg.Rest)
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes clientset for %s: %w", cfg.Rest.Host, err)
	}
	poolCache, err := cache.New(cfg.Rest, cache.Options{
		Scheme: kube.Scheme,
		ByObject: map[ctrlclient.Object]cache.ByObject{
			&v1alpha1.WorkerPool{}: {},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the WorkerPool cache: %w", err)
	}
	if err := poolCache.IndexField(ctx, &v1alpha1.WorkerPool{}, activities.PoolsByConfigIndex, activities.IndexPoolsByConfig); err != nil {
		return nil, fmt.Errorf("indexing WorkerPools by SandboxConfig: %w", err)
	}
	go func() {
		if err := poolCache.Start(ctx); err != nil {
			cfg.Log.Error("WorkerPool cache stopped", "error", err)
		}
	}()
	if !poolCache.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the WorkerPool cache did not sync before shutdown: %w", context.Cause(ctx))
	}
	return &activities.Activities{
		Live:      live,
		Cache:     poolCache,
		Clientset: clientset,
		Temporal:  cfg.Temporal,
		TaskQueue: cfg.TaskQueue,
		Instance:  cfg.Instance,
	}, nil
}
