// Package worker runs the worker process: the Temporal worker, which hosts
// the workflows and the activities (every write of a switch or a release),
// the pool reconciler (worker/poolkeeper), which, on the leader, keeps
// the pools' Deployments scaled and their plain status mirrored, and the
// config keeper (worker/configkeeper), which, on the same leader, keeps the
// SandboxConfigs' kstatus conditions; neither waits for Temporal.
package worker

import (
	"time"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/cached"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/leader"
	"ate.dev/orchestrator/internal/notify"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/worker/configkeeper"
	"ate.dev/orchestrator/worker/poolkeeper"
	"ate.dev/orchestrator/workflows"
)

// Config is what the worker needs.
type Config struct {
	Rest *rest.Config
	// Temporal is the Temporal client; when nil, Dial makes it. The pool
	// keeper needs no Temporal: it runs while Dial still waits for the
	// server, so a worker (re)started during a Temporal outage keeps
	// Deployments scaled and statuses mirrored.
	Temporal client.Client
	// Dial connects to Temporal, retrying until ctx is done (see
	// temporalconn.Dial); used when Temporal is nil. Run closes the
	// client it returns.
	Dial func(ctx context.Context) (client.Client, error)
	// OnConnected, if set, learns the client once Dial has made it (the
	// readiness probe: the worker is not ready before).
	OnConnected func(client.Client)
	// OnNaming, if set, is told why naming the cluster waits (each failed
	// look at the kube-system namespace) and nil once it is named (the
	// readiness probe: the worker is not ready before, and says why).
	OnNaming func(error)
	// ClusterName names the cluster (empty: its kube-system namespace's
	// UID) and TaskQueue its workflows' task queue (empty: the cluster's
	// own); see wfapi.Cluster.
	ClusterName, TaskQueue string
	// Instance names this worker in events; the host name by default.
	Instance string
	// Worker tunes the Temporal worker; zero values take the SDK defaults.
	Worker worker.Options
	// OperatorStartsPerSecond paces the operator workflow's requests
	// (activities.DefaultOperatorStartsPerSecond when zero).
	OperatorStartsPerSecond int
	// RolloutStepDeadline is how long a staged rollout's step may take
	// (activities.DefaultRolloutStepDeadline when zero).
	RolloutStepDeadline time.Duration
	// Metrics answers the PromQL queries of rollouts' analyses (the
	// worker's Prometheus); nil: none, and an analysis is inconclusive.
	Metrics activities.Querier

	// RolloutAfterPoll is how often a rollout waiting for other clusters
	// reads them again (activities.DefaultRolloutAfterPoll when zero).
	RolloutAfterPoll time.Duration
	// LeaderElection makes worker replicas run one pool reconciler: every
	// replica hosts workflows and activities, the leader also keeps the
	// pools' Deployments and plain status.
	LeaderElection leader.Election
	// SkipNameValidation lets tests run several workers in one process.
	SkipNameValidation bool
	Log                *slog.Logger
}

// LeaseName names the worker's leader election Lease, held by the replica
// that runs the pool reconciler.
const LeaseName = "ate-orchestrator-worker"

// reconcileConcurrency is how many pools the pool reconciler keeps at once.
const reconcileConcurrency = 4

// configConcurrency is how many configs the config keeper keeps at once:
// configs are few, and a look is a cache read and at most one patch.
const configConcurrency = 2

// Run starts the worker and blocks until ctx is done: the caches and the
// pool reconciler first, then, once the caches have synced and Temporal is
// reachable (Dial waits for it), the Temporal worker. The pool reconciler
// does not wait for Temporal.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgr, err := newManager(cfg)
	if err != nil {
		return err
	}
	acts, err := newActivities(cfg, mgr)
	if err != nil {
		return err
	}
	keeper := &poolkeeper.Reconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Deployments: acts.Clientset.AppsV1(),
		Events: events.Recorder{Client: acts.Clientset.EventsV1(), Instance: cfg.Instance}}
	if err := keeper.SetupWithManager(mgr, reconcileConcurrency); err != nil {
		return fmt.Errorf("setting up the pool reconciler: %w", err)
	}
	// The configs' kstatus conditions, on the same leader: one writer of
	// them at a time, and, like the pool keeper, no wait for Temporal.
	if err := (&configkeeper.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, configConcurrency); err != nil {
		return fmt.Errorf("setting up the config keeper: %w", err)
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		if err := <-mgrDone; err != nil {
			return fmt.Errorf("the worker's caches did not sync: %w", err)
		}
		return fmt.Errorf("the worker's caches did not sync before shutdown: %w", context.Cause(ctx))
	}

	if cfg.Temporal == nil {
		c, err := dial(ctx, cancel, cfg, mgrDone)
		if c == nil {
			return err // the manager has stopped
		}
		defer c.Close()
		if cfg.OnConnected != nil {
			cfg.OnConnected(c)
		}
		cfg.Temporal = c
	}
	acts.Temporal = cfg.Temporal
	// Named once the caches have synced: the API server answers by then.
	if acts.Scope, err = kube.Scope(ctx, cfg.Rest, cfg.ClusterName, cfg.TaskQueue,
		kube.NamingWait{Log: cfg.Log, Report: cfg.OnNaming}); err != nil {
		return errors.Join(err, stopManager(cancel, mgrDone))
	}
	// The cluster guard goes first: a step of another cluster's workflow is
	// refused before any other interceptor or the step itself runs. It
	// parses the calling workflow's ID, once per step, into the caller the
	// activities check (activities.Caller).
	cfg.Worker.Interceptors = append([]interceptor.WorkerInterceptor{activities.ClusterGuard(acts.Scope.Cluster)}, cfg.Worker.Interceptors...)

	if cfg.Worker.WorkerStopTimeout == 0 {
		// Let activities in flight report their completion on a graceful
		// stop (SIGTERM), rather than have them retried after their timeout.
		cfg.Worker.WorkerStopTimeout = StopTimeout
	}
	w := worker.New(cfg.Temporal, acts.Scope.TaskQueue, cfg.Worker)
	workflows.RegisterWorkflows(w)
	workflows.RegisterActivities(w, acts)
	if err := w.Start(); err != nil {
		return errors.Join(fmt.Errorf("starting the Temporal worker of cluster %q on task queue %q: %w", acts.Scope.Cluster, acts.Scope.TaskQueue, err),
			stopManager(cancel, mgrDone))
	}
	cfg.Log.Info("worker running", "cluster", acts.Scope.Cluster, "taskQueue", acts.Scope.TaskQueue, "instance", cfg.Instance)
	var mgrErr error
	select {
	case <-ctx.Done():
		mgrErr = <-mgrDone
	case mgrErr = <-mgrDone:
	}
	w.Stop()
	if mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
		return fmt.Errorf("the pool reconciler stopped: %w", mgrErr)
	}
	return nil
}

// stopManager stops the manager and waits for it: its error, unless it is
// the stop's own, joins the one that made the worker stop it.
func stopManager(cancel context.CancelFunc, mgrDone <-chan error) error {
	cancel()
	if err := <-mgrDone; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the pool reconciler stopped: %w", err)
	}
	return nil
}

// dial connects to Temporal while the manager (and its pool reconciler)
// runs. Without a client it returns once the manager has stopped (it
// stops the manager when the dial failed), with the manager's error or the
// dial's; nil when the worker was shut down while waiting for Temporal.
func dial(ctx context.Context, cancel context.CancelFunc, cfg Config, mgrDone <-chan error) (client.Client, error) {
	if cfg.Dial == nil {
		return nil, errors.Join(errors.New("the worker needs a Temporal client or a way to dial one"), stopManager(cancel, mgrDone))
	}
	type dialed struct {
		c   client.Client
		err error
	}
	done := make(chan dialed, 1)
	go func() {
		c, err := cfg.Dial(ctx)
		done <- dialed{c, err}
	}()
	var mgrErr error
	select {
	case d := <-done:
		if d.err == nil {
			return d.c, nil
		}
		cancel()
		mgrErr = <-mgrDone
		if ctx.Err() != nil && errors.Is(d.err, context.Canceled) && mgrErr == nil {
			return nil, nil // shut down while waiting for Temporal
		}
		if mgrErr == nil || errors.Is(mgrErr, context.Canceled) {
			return nil, d.err
		}
	case mgrErr = <-mgrDone:
		cancel()
		if d := <-done; d.c != nil {
			d.c.Close()
		}
	}
	if mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
		return nil, fmt.Errorf("the pool reconciler stopped: %w", mgrErr)
	}
	return nil, nil
}

// newManager is the controller-runtime manager of the pool reconciler. Its
// cache (WorkerPools, SandboxConfigs, the pools' Deployments) also serves the
// activities' first looks. The worker serves its own probes and metrics
// (Main).
func newManager(cfg Config) (ctrl.Manager, error) {
	mopts := kube.Manager{LeaseName: LeaseName, LeaderElection: cfg.LeaderElection,
		ShutdownTimeout: ManagerShutdownTimeout, SkipNameValidation: cfg.SkipNameValidation}.Options()
	var err error
	if mopts.Cache.ByObject, err = cacheByObject(); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg.Rest, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating the worker's controller manager: %w", err)
	}
	if err := poolwatch.Index(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// cacheByObject is what the worker's cache holds of pools and Deployments.
// Only the pools' Deployments are cached, not every Deployment of the
// cluster, and of each only what the keeper reads (no pod template: the
// digest of the product's fields stands in for it). The pools keep their
// spec whole: the keeper builds the Deployment from it.
func cacheByObject() (map[ctrlclient.Object]cache.ByObject, error) {
	workerPods, err := labels.NewRequirement(v1alpha1.WorkerPoolLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return map[ctrlclient.Object]cache.ByObject{
		&appsv1.Deployment{}:   {Label: labels.NewSelector().Add(*workerPods), Transform: deployment.ForCache},
		&v1alpha1.WorkerPool{}: {Transform: cached.WorkerPool},
	}, nil
}

// newActivities builds the activities with their clients, and has the
// manager cache's WorkerPool informer tell them which classes' pools
// changed (poolwatch.NotifyClasses), which a rollout step's wait looks on.
// Call it before the manager starts.
func newActivities(cfg Config, mgr ctrl.Manager) (*activities.Activities, error) {
	live, err := kube.LiveClient(cfg.Rest)
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes clientset for %s: %w", cfg.Rest.Host, err)
	}
	changed := &notify.Notifier{}
	pools, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha1.WorkerPool{})
	if err != nil {
		return nil, fmt.Errorf("getting the worker cache's WorkerPool informer: %w", err)
	}
	if _, err := pools.AddEventHandler(poolwatch.NotifyClasses(changed)); err != nil {
		return nil, fmt.Errorf("registering the rollout's pool events on the worker cache's WorkerPool informer: %w", err)
	}
	return &activities.Activities{
		Live:       live,
		Cache:      mgr.GetCache(),
		PoolEvents: changed,
		Clientset:  clientset,
		Temporal:   cfg.Temporal,
		Instance:   cfg.Instance,

		OperatorStartsPerSecond: float64(cfg.OperatorStartsPerSecond),
		RolloutStepDeadline:     cfg.RolloutStepDeadline,
		Metrics:                 cfg.Metrics,
		RolloutAfterPoll:        cfg.RolloutAfterPoll,
	}, nil
}
