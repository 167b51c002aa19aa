package starterapp

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// poolSignaller turns every change that can change a pool's outcome into a
// `reresolve` signal to its pool workflow. The work queue coalesces a burst
// of events into one signal per pool, and a failed signal (Temporal down) is
// retried with backoff. Its initial list signals every pool: the resync that
// catches up on whatever happened while the starter was down.
type poolSignaller struct {
	cache     ctrlclient.Reader
	temporal  client.Client
	taskQueue string
	metrics   *Metrics
}

func (r *poolSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool v1alpha1.WorkerPool
	err := r.cache.Get(ctx, req.NamespacedName, &pool)
	if apierrors.IsNotFound(err) {
		// Gone: wake a running workflow so it sees that and ends, but do not
		// start one for a pool that no longer exists.
		err := r.temporal.SignalWorkflow(ctx, wfapi.PoolWorkflowID(req.Namespace, req.Name), "", wfapi.SignalReresolve, nil)
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			return reconcile.Result{}, err
		}
		r.metrics.signalled("pool-gone")
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := wfapi.SignalPool(ctx, r.temporal, r.taskQueue, req.Namespace, req.Name); err != nil {
		return reconcile.Result{}, err
	}
	r.metrics.signalled("pool")
	return reconcile.Result{}, nil
}

func (r *poolSignaller) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("pool-signaller").
		// Spec changes, creation (and so the start-up resync) and deletion.
		// A status write is the worker's own doing and wakes no pool.
		For(&v1alpha1.WorkerPool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The Deployment's status feeds the pool's replica fields, and an
		// edit of its spec is reverted by the next apply.
		Owns(&appsv1.Deployment{}, builder.WithPredicates(deploymentChanged)).
		Watches(&v1alpha1.SandboxConfig{}, r.configEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// configEvents maps SandboxConfig events to the pools they may affect.
func (r *poolSignaller) configEvents() handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueRL) {
			r.enqueueUsers(ctx, q, e.Object.(*v1alpha1.SandboxConfig), nil)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueRL) {
			oldC, newC := e.ObjectOld.(*v1alpha1.SandboxConfig), e.ObjectNew.(*v1alpha1.SandboxConfig)
			if outcomeRelevant(oldC, newC) {
				r.enqueueUsers(ctx, q, newC, oldC)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueueRL) {
			if c, ok := e.Object.(*v1alpha1.SandboxConfig); ok {
				r.enqueueUsers(ctx, q, c, nil)
			}
		},
	}
}

// enqueueUsers enqueues every pool a config event may affect: pools whose
// spec or status names it and, when it is or was a class default candidate,
// the unpinned pools of its class (and of its old class, if that changed).
func (r *poolSignaller) enqueueUsers(ctx context.Context, q workqueueRL, c, old *v1alpha1.SandboxConfig) {
	seen := map[types.NamespacedName]bool{}
	add := func(field, value string) {
		var pools v1alpha1.WorkerPoolList
		if err := r.cache.List(ctx, &pools, ctrlclient.MatchingFields{field: value}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing WorkerPools affected by a SandboxConfig", "config", c.Name, "index", field)
			return
		}
		for i := range pools.Items {
			key := types.NamespacedName{Namespace: pools.Items[i].Namespace, Name: pools.Items[i].Name}
			if !seen[key] {
				seen[key] = true
				q.Add(reconcile.Request{NamespacedName: key})
			}
		}
	}
	add(specConfigIndex, c.Name)
	add(activities.PoolsByConfigIndex, c.Name)
	for _, cfg := range []*v1alpha1.SandboxConfig{c, old} {
		if cfg != nil && cfg.IsClassDefault() {
			add(unpinnedClassIndex, string(classOf(cfg)))
		}
	}
}

// outcomeRelevant reports whether a config update can change any pool's
// resolution: its class, its class-default annotation, its deletion, or its
// finalizers while it is in deletion. Everything else (versions, assets) does
// not move pools. Resolution reads the finalizer only of a config in deletion
// (whether a pool may keep it), so the finalizer a switch adds to its target
// wakes nobody: otherwise every switch to a new default would wake every
// unpinned pool of the class a second time.
func outcomeRelevant(old, cur *v1alpha1.SandboxConfig) bool {
	return classOf(old) != classOf(cur) ||
		old.IsClassDefault() != cur.IsClassDefault() ||
		old.IsDeleting() != cur.IsDeleting() ||
		(cur.IsDeleting() && old.IsProtected() != cur.IsProtected())
}

func classOf(c *v1alpha1.SandboxConfig) v1alpha1.SandboxClass {
	if c.Spec.SandboxClass == "" {
		return v1alpha1.SandboxClassGVisor
	}
	return c.Spec.SandboxClass
}

var deploymentChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*appsv1.Deployment), e.ObjectNew.(*appsv1.Deployment)
		return o.Generation != n.Generation ||
			o.Status.Replicas != n.Status.Replicas ||
			o.Status.ReadyReplicas != n.Status.ReadyReplicas
	},
}
