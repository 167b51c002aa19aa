// Package starterapp runs the starter: the thin, level-triggered watch bridge
// from the API server to Temporal. It watches WorkerPools, SandboxConfigs and
// the pools' Deployments and turns every change that can change an outcome
// into a signal-with-start. It writes nothing to Kubernetes.
package starterapp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
)

// +kubebuilder:rbac:groups=ate.dev,resources=workerpools;sandboxconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

type workqueueRL = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Config is what the starter needs.
type Config struct {
	Rest      *rest.Config
	Temporal  client.Client
	TaskQueue string
	// Concurrency is the number of signals in flight per controller.
	Concurrency int
	// LeaderElection makes replicas safe: only the leader signals.
	LeaderElection          bool
	LeaderElectionNamespace string
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	// SkipNameValidation lets tests run several starters in one process.
	SkipNameValidation bool
}

// Run starts the starter and blocks until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.MetricsBindAddress == "" {
		cfg.MetricsBindAddress = "0"
	}
	workerPods, err := labels.NewRequirement(v1alpha1.WorkerPoolLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg.Rest, ctrl.Options{
		Scheme:                  kube.Scheme,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:  cfg.HealthProbeBindAddress,
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        "ate-orchestrator-starter",
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// Only the pools' Deployments are cached, not every Deployment of
		// the cluster.
		Cache: cache.Options{ByObject: map[ctrlclient.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: labels.NewSelector().Add(*workerPods)},
		}},
		GracefulShutdownTimeout: ptr(10 * time.Second),
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr(cfg.SkipNameValidation)},
	})
	if err != nil {
		return fmt.Errorf("creating the starter's manager: %w", err)
	}
	if err := indexPools(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	metrics := newMetrics()
	pools := &poolSignaller{cache: mgr.GetClient(), temporal: cfg.Temporal, taskQueue: cfg.TaskQueue, metrics: metrics}
	if err := pools.setup(mgr, cfg.Concurrency); err != nil {
		return fmt.Errorf("setting up the pool signaller: %w", err)
	}
	releases := &releaseStarter{cache: mgr.GetClient(), temporal: cfg.Temporal, taskQueue: cfg.TaskQueue, metrics: metrics}
	if err := releases.setup(mgr, cfg.Concurrency); err != nil {
		return fmt.Errorf("setting up the release starter: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("temporal", func(req *http.Request) error {
		_, err := cfg.Temporal.CheckHealth(req.Context(), &client.CheckHealthRequest{})
		return err
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func ptr[T any](v T) *T { return &v }
