package starter

import (
	"context"
	"fmt"
	"sync"

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
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// releaseStarter starts or wakes the release workflow of every SandboxConfig
// that is in deletion and still carries the protection finalizer: once
// when this starter first sees it in deletion (its deletion mark, or the
// initial list at start-up, so a config whose last user went away while
// the product was down is released then, and a release that waits shows
// so from the mark), and then only when its cache shows that no pool's
// status names it any more. The pool events that may remove a user (the
// worker's status write, or a pool's deletion, seen through the deleted
// object's last status, since pools carry no finalizer) all look, but only
// the one after which no user is left wakes the release: the reconcile
// runs after the informer applied the event, so it sees the count reach
// zero. A fleet moving off a deleted default thus wakes its release once,
// not once per pool (docs/decisions/0014-release-fan-in.md).
type releaseStarter struct {
	cache    ctrlclient.Reader
	temporal client.Client
	scope    wfapi.Scope
	metrics  *Metrics

	mu sync.Mutex
	// woken holds each config in deletion whose release this starter has
	// started or woken since it started; an entry goes when its config
	// loses the protection finalizer or is gone (releaseConfigEvents).
	woken map[string]wokenRelease
}

// wokenRelease is what the starter knows of a config it woke the release
// of: which incarnation, and whether its last look found no user, so that
// events after the count reached zero (a reconcile of an event the look
// before it already saw) wake the release no more.
type wokenRelease struct {
	uid    types.UID
	unused bool
}

func (r *releaseStarter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1alpha1.SandboxConfig
	if err := r.cache.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return reconcile.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !c.IsDeleting() || !c.IsProtected() {
		r.forget(c.Name)
		return reconcile.Result{}, nil
	}
	inUse, err := r.inUse(ctx, c.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	earlier, seen := r.seen(&c)
	r.remember(&c, !inUse)
	if seen && (inUse || earlier.unused) {
		// Users remain, and the event of the last one's leaving comes;
		// or none was left at the last look, which woke the release.
		return reconcile.Result{}, nil
	}
	if err := wfapi.SignalRelease(ctx, r.temporal, r.scope, c.Name); err != nil {
		r.forget(c.Name) // the retry wakes it
		return reconcile.Result{}, err
	}
	r.metrics.signalled("release")
	return reconcile.Result{}, nil
}

// inUse says whether the cache shows a pool whose status names config. It
// only counts, so it reads the cache's own objects, not copies, and one.
func (r *releaseStarter) inUse(ctx context.Context, config string) (bool, error) {
	var pools v1alpha1.WorkerPoolList
	if err := r.cache.List(ctx, &pools, ctrlclient.MatchingFields{poolwatch.StatusConfigIndex: config},
		ctrlclient.Limit(1), ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("looking up WorkerPools naming SandboxConfig %q in the cache: %w", config, err)
	}
	return len(pools.Items) > 0, nil
}

// seen returns what the starter knows of this incarnation of c, if it woke
// its release before.
func (r *releaseStarter) seen(c *v1alpha1.SandboxConfig) (wokenRelease, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.woken[c.Name]
	return w, ok && w.uid == c.UID
}

func (r *releaseStarter) remember(c *v1alpha1.SandboxConfig, unused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.woken == nil {
		r.woken = map[string]wokenRelease{}
	}
	r.woken[c.Name] = wokenRelease{uid: c.UID, unused: unused}
}

func (r *releaseStarter) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.woken, name)
}

func (r *releaseStarter) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("release-starter").
		For(&v1alpha1.SandboxConfig{}, builder.WithPredicates(releaseConfigEvents)).
		Watches(&v1alpha1.WorkerPool{}, handler.EnqueueRequestsFromMapFunc(r.configsInDeletion),
			builder.WithPredicates(poolStatusConfigsChanged)).
		// A failed signal is retried as a failed switch start is (see
		// startRateLimiter), not with the default limiter's 17 minutes.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: startRateLimiter()}).
		Complete(r)
}

// releaseConfigEvents passes the events of a config in deletion that still
// carries the protection finalizer, and those that end that state: the
// update that removes the finalizer (its release), and every deletion
// (the config gone; a relist may deliver only that). Reconcile then finds
// the config unprotected or gone and forgets it, so woken holds the
// configs whose release is pending, not every config ever released.
var releaseConfigEvents = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return toRelease(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return toRelease(e.ObjectOld) || toRelease(e.ObjectNew) },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(e event.GenericEvent) bool { return toRelease(e.Object) },
}

// toRelease reports whether o is a config in deletion that still carries
// the protection finalizer: one whose release is pending.
func toRelease(o ctrlclient.Object) bool {
	c, ok := o.(*v1alpha1.SandboxConfig)
	return ok && c.IsDeleting() && c.IsProtected()
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
