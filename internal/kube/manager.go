package kube

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"ate.dev/orchestrator/internal/cached"
	"ate.dev/orchestrator/internal/leader"
)

// Manager describes the controller-runtime manager of the worker (its pool
// keeper and caches) or the starter (its watches); Options builds what both
// share, so the two processes cannot drift apart.
type Manager struct {
	// LeaseName names the leader election Lease of the process.
	LeaseName      string
	LeaderElection leader.Election
	// ShutdownTimeout bounds the manager's graceful stop.
	ShutdownTimeout time.Duration
	// SkipNameValidation lets tests run several managers of one process in
	// one test binary (controller names are otherwise unique per process).
	SkipNameValidation bool
}

// Options are the manager's options: the product's scheme, the leader
// election, and no metrics or probe server of the manager's own. Each
// process serves /metrics, /healthz and /readyz itself (internal/probes),
// from its start rather than from the manager's: a process waiting for
// Temporal must answer its liveness probe. The metrics are the same:
// controller-runtime's registry, served by controller-runtime's metrics
// server (HTTPS with TokenReview and SubjectAccessReview), only started by
// the process instead of the manager.
func (m Manager) Options() ctrl.Options {
	o := ctrl.Options{
		Scheme:                  Scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &m.ShutdownTimeout,
		Controller:              ctrlconfig.Controller{SkipNameValidation: &m.SkipNameValidation},
		// Nothing reads an object's managedFields or kubectl's
		// last-applied annotation, and they are a large part of a cached
		// object: the caches hold one pool (and, in the worker, one
		// Deployment) per pool. Each process sets its own transforms for
		// pools and Deployments on top (internal/cached).
		Cache: cache.Options{DefaultTransform: cached.StripUnread},
	}
	m.LeaderElection.Apply(&o, m.LeaseName)
	return o
}
