// Package baseline is what the bench compares the product with: the
// product's switch protocol as an ordinary controller-runtime reconciler,
// with no Temporal (BENCHMARKS.md, "Plain reconciler").
package baseline

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kworkqueue "k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// Reconciler is the baseline the product is compared with: the same
// protocol as the product's switch (protect the target with the finalizer,
// claim it in pendingConfigRef, read it live, confirm or roll back, record
// the event), as an ordinary controller-runtime reconciler with no
// Temporal. Pools and SandboxConfigs are read from the manager's cache;
// the target is read live after the claim, as the product's ReadConfig
// does. It runs in the bench process with the product stopped.
type Reconciler struct {
	cache client.Reader // the manager's cache
	live  client.Client // uncached
	// reconciles counts Reconcile calls, for the bench to wait out the
	// initial list before it starts the clock.
	reconciles atomic.Int64
}

// New is a reconciler that reads from cache (a manager's) and writes, and
// reads the target after its claim, with live.
func New(cache client.Reader, live client.Client) *Reconciler {
	return &Reconciler{cache: cache, live: live}
}

// Reconciles is how many times Reconcile has run.
func (r *Reconciler) Reconciles() int64 { return r.reconciles.Load() }

// plainController names the reconciler's controller and its events.
const plainController = "ate.dev/bench-plain-reconciler"

// workqueue is the queue controller-runtime hands an event handler.
type workqueue = kworkqueue.TypedRateLimitingInterface[reconcile.Request]

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer r.reconciles.Add(1)
	var pool v1alpha1.WorkerPool
	if err := r.cache.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var list v1alpha1.SandboxConfigList
	if err := r.cache.List(ctx, &list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing SandboxConfigs from the cache: %w", err)
	}
	configs := resolve.ConfigsFrom(list.Items)
	for _, entry := range pool.Spec.SandboxClasses {
		if err := r.reconcileClass(ctx, &pool, entry, configs); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) reconcileClass(ctx context.Context, pool *v1alpha1.WorkerPool, entry v1alpha1.WorkerPoolSandboxClass, configs []resolve.Config) error {
	current := ""
	if st := pool.Status.ClassStatus(entry.Name); st != nil && st.ConfigRef != nil {
		current = st.ConfigRef.Name
	}
	res := resolve.Class(rollout.KeyOf(pool), entry, current, configs)
	if !res.Resolved || res.Target == current {
		// Nothing moves: only the condition (and a stale claim) may need
		// a write.
		return r.settle(ctx, pool, entry.Name, res.Resolved, res.Reason, res.Message)
	}
	ok, reason, message, err := r.protect(ctx, res.Target, entry.Name)
	if err != nil || !ok {
		if err == nil {
			err = r.settle(ctx, pool, entry.Name, false, reason, message)
		}
		return err
	}
	// Claim: from here on a release sees the pool as a user of the target.
	poolstatus.EnsureClass(&pool.Status, entry.Name).PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: res.Target}
	poolstatus.SetSummary(pool)
	if err := r.live.Status().Update(ctx, pool); err != nil {
		return fmt.Errorf("claiming SandboxConfig %q on WorkerPool %s/%s: %w", res.Target, pool.Namespace, pool.Name, err)
	}
	// The live read after the claim sees a deletion that raced it.
	var target *resolve.Config
	var c v1alpha1.SandboxConfig
	switch err := r.live.Get(ctx, client.ObjectKey{Name: res.Target}, &c); {
	case err == nil:
		view := resolve.ConfigFrom(&c)
		target = &view
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading SandboxConfig %q: %w", res.Target, err)
	}
	ok, reason, message = resolve.CheckTarget(res.Target, target, entry.Name)
	if !ok {
		return r.settle(ctx, pool, entry.Name, false, reason, message)
	}
	// Confirm: configRef = target, the claim cleared, Resolved True.
	st := poolstatus.EnsureClass(&pool.Status, entry.Name)
	st.ConfigRef, st.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: res.Target}, nil
	poolstatus.SetClassCondition(&pool.Status, entry.Name, poolstatus.ClassCondition(true, reason, message, pool.Generation))
	poolstatus.SetSummary(pool)
	if err := r.live.Status().Update(ctx, pool); err != nil {
		return fmt.Errorf("confirming SandboxConfig %q on WorkerPool %s/%s: %w", res.Target, pool.Namespace, pool.Name, err)
	}
	return r.recordSwitch(ctx, pool, entry.Name, current, res.Target)
}

// protect adds the protection finalizer to the target unless the cached
// copy has it; the patch is guarded by the resourceVersion, and a conflict
// reads live and tries again.
func (r *Reconciler) protect(ctx context.Context, name string, class v1alpha1.SandboxClass) (ok bool, reason, message string, err error) {
	var c v1alpha1.SandboxConfig
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			ok, reason, message = resolve.CheckTarget(name, nil, class)
			return ok, reason, message, nil
		}
		return false, "", "", fmt.Errorf("reading SandboxConfig %q from the cache: %w", name, err)
	}
	view := resolve.ConfigFrom(&c)
	if ok, reason, message = resolve.CheckTarget(name, &view, class); !ok || c.IsProtected() {
		return ok, reason, message, nil
	}
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.live.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
				return err
			}
			if c.IsProtected() {
				return nil
			}
		}
		first = false
		base := c.DeepCopy()
		controllerutil.AddFinalizer(&c, v1alpha1.ProtectionFinalizer)
		return r.live.Patch(ctx, &c, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return false, "", "", fmt.Errorf("adding finalizer %s to SandboxConfig %q: %w", v1alpha1.ProtectionFinalizer, name, err)
	}
	return ok, reason, message, nil
}

// settle clears a claim and sets the class's Resolved condition, writing
// only when that changes the status.
func (r *Reconciler) settle(ctx context.Context, pool *v1alpha1.WorkerPool, class v1alpha1.SandboxClass, resolved bool, reason, message string) error {
	st := poolstatus.EnsureClass(&pool.Status, class)
	changed := st.PendingConfigRef != nil
	st.PendingConfigRef = nil
	changed = poolstatus.SetClassCondition(&pool.Status, class, poolstatus.ClassCondition(resolved, reason, message, pool.Generation)) || changed
	changed = poolstatus.SetSummary(pool) || changed
	if !changed {
		return nil
	}
	if err := r.live.Status().Update(ctx, pool); err != nil {
		return fmt.Errorf("settling sandbox class %q on WorkerPool %s/%s: %w", class, pool.Namespace, pool.Name, err)
	}
	return nil
}

// SwitchEvent is a Normal "Switch" event regarding pool, reported by
// controller, named from the pool's UID and key so a retry records it once.
// The bench's API floor makes its events with it too.
func SwitchEvent(pool *v1alpha1.WorkerPool, key, controller, reason, note string) *eventsv1.Event {
	ref := wfapi.PoolRef{Namespace: pool.Namespace, Name: pool.Name, UID: string(pool.UID)}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: events.Name(events.Pool(ref), key), Namespace: pool.Namespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: controller,
		ReportingInstance:   "bench",
		Action:              "Switch",
		Reason:              reason,
		Note:                note,
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkerPool",
			Namespace: pool.Namespace, Name: pool.Name, UID: types.UID(pool.UID),
		},
	}
}

// recordSwitch creates the SandboxConfigSwitched event.
func (r *Reconciler) recordSwitch(ctx context.Context, pool *v1alpha1.WorkerPool, class v1alpha1.SandboxClass, from, to string) error {
	ev := SwitchEvent(pool, "plain/"+to, plainController, v1alpha1.EventReasonSandboxConfigSwitched,
		fmt.Sprintf("sandbox class %q switched from SandboxConfig %q to %q", class, from, to))
	if err := r.live.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the switch of WorkerPool %s/%s to %q: %w", pool.Namespace, pool.Name, to, err)
	}
	return nil
}

// Setup registers the reconciler with at most mcr reconciles at once: pools on creation and spec changes
// (its own status writes do not wake it), and every pool on a config
// event that can change what they resolve to.
func (r *Reconciler) Setup(mgr ctrl.Manager, mcr int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(fmt.Sprintf("bench-plain-mcr%d", mcr)).
		For(&v1alpha1.WorkerPool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.SandboxConfig{}, r.configEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: mcr}).
		Complete(r)
}

func (r *Reconciler) configEvents() handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue) { r.enqueueAll(ctx, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue) {
			if configRelevant(e.ObjectOld.(*v1alpha1.SandboxConfig), e.ObjectNew.(*v1alpha1.SandboxConfig)) {
				r.enqueueAll(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue) { r.enqueueAll(ctx, q) },
	}
}

// configRelevant reports whether a config update can change what a pool
// resolves to: its class, its default annotation, its deletion, or its
// finalizer while it is in deletion.
func configRelevant(old, cur *v1alpha1.SandboxConfig) bool {
	return old.Spec.SandboxClass != cur.Spec.SandboxClass || old.IsClassDefault() != cur.IsClassDefault() ||
		old.IsDeleting() != cur.IsDeleting() || (cur.IsDeleting() && old.IsProtected() != cur.IsProtected())
}

func (r *Reconciler) enqueueAll(ctx context.Context, q workqueue) {
	var pools v1alpha1.WorkerPoolList
	if err := r.cache.List(ctx, &pools); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing WorkerPools from the cache")
		return
	}
	for i := range pools.Items {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pools.Items[i].Namespace, Name: pools.Items[i].Name}})
	}
}
