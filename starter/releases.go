package starter

import (
	"context"

	"go.temporal.io/sdk/client"
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

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// releaseStarter starts or wakes the release workflow of every SandboxConfig
// that is in deletion and still carries the protection finalizer, when:
// the config is marked for deletion; a pool's status stops naming it (the
// worker's own status write, or a pool's deletion, seen through the deleted
// object's last status, since pools carry no finalizer); and at start-up,
// through the initial list, so a config whose last user went away while the
// product was down is released then.
type releaseStarter struct {
	cache    ctrlclient.Reader
	temporal client.Client
	scope    wfapi.Scope
	metrics  *Metrics
}

func (r *releaseStarter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1alpha1.SandboxConfig
	if err := r.cache.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !c.IsDeleting() || !c.IsProtected() {
		return reconcile.Result{}, nil
	}
	if err := wfapi.SignalRelease(ctx, r.temporal, r.scope, c.Name); err != nil {
		return reconcile.Result{}, err
	}
	r.metrics.signalled("release")
	return reconcile.Result{}, nil
}

func (r *releaseStarter) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("release-starter").
		For(&v1alpha1.SandboxConfig{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			c, ok := o.(*v1alpha1.SandboxConfig)
			return ok && c.IsDeleting() && c.IsProtected()
		}))).
		Watches(&v1alpha1.WorkerPool{}, handler.EnqueueRequestsFromMapFunc(r.configsInDeletion),
			builder.WithPredicates(poolStatusConfigsChanged)).
		// A failed signal is retried as a failed switch start is (see
		// startRateLimiter), not with the default limiter's 17 minutes.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: startRateLimiter()}).
		Complete(r)
}

// configsInDeletion maps a pool (the old and the new object of an update, or
// the last state of a deleted one) to the configs its status names that are
// in deletion.
func (r *releaseStarter) configsInDeletion(ctx context.Context, o ctrlclient.Object) []reconcile.Request {
	pool, ok := o.(*v1alpha1.WorkerPool)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range pool.Status.ConfigNames() {
		var c v1alpha1.SandboxConfig
		if err := r.cache.Get(ctx, types.NamespacedName{Name: name}, &c); err != nil {
			if !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Error(err, "reading SandboxConfig from the cache", "config", name)
			}
			continue
		}
		if c.IsDeleting() && c.IsProtected() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return reqs
}

// poolStatusConfigsChanged passes pool deletions and the updates that change
// which configs a status names; the create of the initial list is covered by
// the configs' own initial list.
var poolStatusConfigsChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.WorkerPool), e.ObjectNew.(*v1alpha1.WorkerPool)
		return !equalStrings(o.Status.ConfigNames(), n.Status.ConfigNames())
	},
	DeleteFunc: func(event.DeleteEvent) bool { return true },
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
