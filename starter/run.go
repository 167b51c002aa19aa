// Package starter runs the starter: the thin, level-triggered watch bridge
// from the API server to Temporal. It watches WorkerPools and SandboxConfigs,
// starts the switch a pool's next move needs (a pool already where it
// should be costs Temporal nothing), and wakes the release workflow of a
// config in deletion. It writes nothing to Kubernetes.
package starter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/cached"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/leader"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/poolwatch"
)

// The starter's rights (`make generate` writes them into deploy/rbac/starter):
// it reads WorkerPools and SandboxConfigs through its cache, cluster-wide,
// and writes nothing to Kubernetes but its leader election Lease and the
// core/v1 events controller-runtime records about it, in its own namespace
// only (a Role), and the reviews below. It does not watch Deployments.
//
// +kubebuilder:rbac:groups=ate.dev,resources=workerpools;sandboxconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get,resourceNames=kube-system
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=ate-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=ate-system
//
// Its HTTPS metrics endpoint (internal/probes.ServeMetrics, METRICS_SECURE)
// asks the API server who a scraper is and whether it may get /metrics:
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// LeaseName names the starter's leader election Lease.
const LeaseName = "ate-orchestrator-starter"

// Config is what the starter needs.
type Config struct {
	Rest     *rest.Config
	Temporal client.Client
	// ClusterName names the cluster (empty: its kube-system namespace's
	// UID) and TaskQueue its workflows' task queue (empty: the cluster's
	// own); see wfapi.Cluster.
	ClusterName, TaskQueue string
	// Concurrency is the number of starts and signals in flight per
	// controller (options.DefaultStartConcurrency when zero).
	Concurrency int
	// LeaderElection makes replicas safe: only the leader signals.
	LeaderElection leader.Election
	// OnNaming, if set, is told why naming the cluster waits (each failed
	// look at the kube-system namespace) and nil once it is named (the
	// readiness probe: the starter is not ready before, and says why).
	OnNaming func(error)
	// SkipNameValidation lets tests run several starters in one process.
	SkipNameValidation bool
}

// cacheByObject is what the starter's cache holds of pools: it plans moves
// and never builds a Deployment, so no worker pod template.
func cacheByObject() map[ctrlclient.Object]cache.ByObject {
	return map[ctrlclient.Object]cache.ByObject{
		&v1alpha1.WorkerPool{}: {Transform: cached.StarterWorkerPool},
	}
}

// Run starts the starter and blocks until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = options.DefaultStartConcurrency
	}
	mopts := kube.Manager{LeaseName: LeaseName, LeaderElection: cfg.LeaderElection,
		ShutdownTimeout: 10 * time.Second, SkipNameValidation: cfg.SkipNameValidation}.Options()
	mopts.Cache.ByObject = cacheByObject()
	mgr, err := ctrl.NewManager(cfg.Rest, mopts)
	if err != nil {
		return fmt.Errorf("creating the starter's manager: %w", err)
	}
	if err := poolwatch.Index(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	scope, err := kube.Scope(ctx, cfg.Rest, cfg.ClusterName, cfg.TaskQueue,
		kube.NamingWait{Log: slog.New(logr.ToSlogHandler(ctrl.LoggerFrom(ctx))), Report: cfg.OnNaming})
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("starting workflows", "cluster", scope.Cluster, "taskQueue", scope.TaskQueue)
	metrics := newMetrics()
	defer releasesWaiting.add(mgr.GetClient())()
	pools := &switchStarter{cache: mgr.GetClient(), temporal: cfg.Temporal, scope: scope, metrics: metrics, inFlight: newClaims()}
	if err := pools.setup(mgr, cfg.Concurrency); err != nil {
		return fmt.Errorf("setting up the switch starter: %w", err)
	}
	releases := &releaseStarter{cache: mgr.GetClient(), temporal: cfg.Temporal, scope: scope, metrics: metrics}
	if err := releases.setup(mgr, cfg.Concurrency); err != nil {
		return fmt.Errorf("setting up the release starter: %w", err)
	}
	rollouts := &rolloutStarter{cache: mgr.GetClient(), temporal: cfg.Temporal, scope: scope}
	if err := rollouts.setup(mgr, cfg.Concurrency); err != nil {
		return fmt.Errorf("setting up the rollout starter: %w", err)
	}
	// Leader only: the operator workflow operators signal (operator.go).
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return keepOperatorRunning(ctx, cfg.Temporal, scope)
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
