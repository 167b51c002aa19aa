// Package configkeeper keeps the kstatus conditions of every SandboxConfig
// (Ready, Progressing, Stalled) and its status.observedGeneration, so that
// `helm --wait`, Flux health checks, `kubectl wait --for=condition=Ready`
// and Argo CD see a staged rollout as it stands. It is the one writer of
// those two fields; the mapping is rollout.Conditions.
//
// It is a level-triggered controller in the worker process, on the leader
// beside the pool keeper, rather than a step of the rollout workflow: the
// conditions of a config depend on other configs (a newer default
// supersedes it) and must be right also for configs no rollout workflow
// runs for (no spec.rollout, never a default, a workflow not started yet
// or Temporal down), so they are derived from what the cache holds, and a
// crash loses nothing the next look would not redo.
package configkeeper

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
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
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

// +kubebuilder:rbac:groups=ate.dev,resources=sandboxconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=ate.dev,resources=sandboxconfigs/status,verbs=get;patch

// Reconciler writes a config's conditions and observedGeneration.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client ctrlclient.Client
}

// maxRetryBackoff caps the backoff of a config whose write keeps failing.
const maxRetryBackoff = 30 * time.Second

// SetupWithManager registers the reconciler. A config event enqueues every
// config of its class (of its class before the event too, should the class
// change): whether a config's rollout is live depends on which config is
// the newest default of the class, so a new default, or one that stops
// being one, changes the conditions of the others.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("config-keeper").
		Watches(&v1alpha1.SandboxConfig{}, handler.EnqueueRequestsFromMapFunc(r.classOf),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: notOwnWrite})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](50*time.Millisecond, maxRetryBackoff),
		}).
		Complete(r)
}

// classOf lists, from the cache, every config of obj's class, obj included
// (it may be gone from the cache already: a deletion).
func (r *Reconciler) classOf(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	c, ok := obj.(*v1alpha1.SandboxConfig)
	if !ok {
		return nil
	}
	reqs := []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Name: c.Name}}}
	configs, err := poolwatch.ListConfigs(ctx, r.Client)
	if err != nil {
		// Only the config itself then; the next event of the class
		// wakes the others.
		ctrl.LoggerFrom(ctx).Error(err, "listing the SandboxConfigs of a class to keep their conditions", "config", c.Name, "class", c.Class())
		return reqs
	}
	for _, o := range configs {
		if o.Class == c.Class() && o.Name != c.Name {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrlclient.ObjectKey{Name: o.Name}})
		}
	}
	return reqs
}

// notOwnWrite drops the update events of the keeper's own writes (only
// status.conditions, status.observedGeneration and the object's metadata
// bookkeeping changed): they change no config's conditions, and each would
// otherwise cost a look at every config of the class.
func notOwnWrite(e event.UpdateEvent) bool {
	oldC, ok1 := e.ObjectOld.(*v1alpha1.SandboxConfig)
	newC, ok2 := e.ObjectNew.(*v1alpha1.SandboxConfig)
	if !ok1 || !ok2 {
		return true
	}
	a, b := oldC.DeepCopy(), newC.DeepCopy()
	for _, c := range []*v1alpha1.SandboxConfig{a, b} {
		c.Status.Conditions, c.Status.ObservedGeneration = nil, 0
		c.ResourceVersion, c.ManagedFields = "", nil
	}
	return !equality.Semantic.DeepEqual(a, b)
}

// Reconcile writes one config's conditions and observedGeneration when they
// are not as its rollout and its class's configs say.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1alpha1.SandboxConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if c.IsDeleting() {
		// kstatus reads a deleting object as Terminating whatever its
		// conditions say, and the deletion mark bumps a custom
		// resource's generation: a write now would only change the
		// resourceVersion the release read, so its finalizer removal,
		// guarded by it, would be refused and the release would look
		// again, once per deletion.
		return reconcile.Result{}, nil
	}
	configs, err := poolwatch.ListConfigs(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("keeping the conditions of SandboxConfig %q: %w", c.Name, err)
	}
	want := rollout.Conditions(&c, resolve.NewestDefault(c.Class(), configs), metav1.Now())
	if c.Status.ObservedGeneration == want.ObservedGeneration && equality.Semantic.DeepEqual(c.Status.Conditions, want.Conditions) {
		return reconcile.Result{}, nil
	}
	// A JSON merge patch of the two fields alone, so status.rollout, which
	// the rollout workflow merge-patches, is never written here; guarded by
	// the cached resourceVersion, so conditions computed from a
	// status.rollout the workflow has changed since are refused (a
	// conflict) rather than written over the newer phase, and the config
	// is looked at again.
	base := c.DeepCopy()
	c.Status.Conditions, c.Status.ObservedGeneration = want.Conditions, want.ObservedGeneration
	patch := ctrlclient.MergeFromWithOptions(base, ctrlclient.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, &c, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // deleted since: nothing to keep
		}
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // SA1019: the queue's rate-limited backoff, which a fixed RequeueAfter would replace
		}
		return reconcile.Result{}, fmt.Errorf("writing the conditions of SandboxConfig %q: %w", c.Name, err)
	}
	return reconcile.Result{}, nil
}
