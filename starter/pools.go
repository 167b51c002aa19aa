package starter

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// switchStarter starts the switches pools need. For each pool it plans, from
// its cache, the move resolution asks for (resolve.NextMove) and starts the
// pool's switch workflow with it; a pool already where it should be costs
// Temporal nothing, so the initial list after a start or a leader failover
// over an up-to-date fleet sends no request. The switch itself re-checks
// what the cache said: its claim is written only while the class still
// names the config the move was decided from.
type switchStarter struct {
	cache    ctrlclient.Reader
	temporal client.Client
	scope    wfapi.Scope
	metrics  *Metrics
	inFlight *claims
}

func (r *switchStarter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool, move, needs, err := plan(ctx, r.cache, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !needs {
		if pool != nil {
			r.withdraw(ctx, pool)
		}
		r.inFlight.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if wait := r.inFlight.wait(req.NamespacedName, move); wait > 0 {
		// The pool holds the claim of this move, or the move was started
		// or refused a moment ago: its switch is under way, and its writes
		// wake the pool. Look again later in case the switch ended without
		// one (stopped by hand, or refused before its claim).
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	switch err := startMove(ctx, r.temporal, r.scope, pool, move); {
	case errors.Is(err, wfapi.ErrSwitchRunning):
		r.metrics.signalled("switch-running")
		again, ask := r.inFlight.refused(req.NamespacedName, move)
		if ask && !r.inFlight.knowsRunning(req.NamespacedName) {
			ask = r.differs(ctx, req.NamespacedName, move)
		}
		if ask {
			// The running switch works on another move than the pool now
			// needs (or one this starter does not know): ask it to re-plan.
			// Before its claim it yields at once; after it, it looks again
			// once it has ended. Once per distinct move, not per retry.
			if err := wfapi.SignalSwitch(ctx, r.temporal, r.scope.Cluster, pool.Namespace, pool.Name); err != nil {
				log.Error(err, "could not ask the running switch to re-plan", "class", move.Class, "to", move.To)
			} else {
				r.inFlight.signalled(req.NamespacedName, move)
				r.metrics.signalled("reresolve")
			}
		}
		return reconcile.Result{RequeueAfter: again}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	again := r.inFlight.started(req.NamespacedName, move)
	r.metrics.signalled("switch")
	log.V(1).Info("started a switch", "class", move.Class, "from", move.From, "to", move.To, "abandon", move.Abandon)
	return reconcile.Result{RequeueAfter: again}, nil
}

// differs reports whether the pool's running switch, which this starter
// neither started nor signalled (a switch of its predecessor, before a
// restart or a leader handover), works on another move than move. A switch
// making the very move the pool needs is left alone: a `reresolve` would
// make it yield before its claim and run again from a live read, or make
// the server refuse the completion of a task in flight and run it again,
// for the same move. A run that decides its move itself (started by an
// operator, or continued as new for a fresh look), or one that cannot be
// read, is asked as before: once per distinct move.
func (r *switchStarter) differs(ctx context.Context, key types.NamespacedName, move resolve.Move) bool {
	in, err := wfapi.RunningSwitch(ctx, r.temporal, r.scope.Cluster, key.Namespace, key.Name)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("could not read the running switch's move; asking it to re-plan", "error", err.Error())
		return true
	}
	if !in.IsMove() {
		return true
	}
	r.inFlight.running(key, keyOfRun(in))
	return keyOfRun(in) != keyOf(move)
}

// withdraw asks the pool's running switch to re-plan when the pool needs no
// move but the switch this starter knows of has not made its move: the move
// was withdrawn (the new default lost its annotation, the pin went back)
// while the switch was stuck before its claim. Left alone, it would make the
// move once its step passed, and another switch would move the pool back:
// two SandboxConfigSwitched events for a move nobody wanted. Asked, it
// yields before its claim and ends from a fresh look; after its claim it
// finishes and looks again. A switch whose move shows on the pool is done
// and is not asked: a wave costs no signal. The starter does not ask about a
// pool gone or in deletion: its switch finds that at its next write.
func (r *switchStarter) withdraw(ctx context.Context, pool *v1alpha1.WorkerPool) {
	known, ok := r.inFlight.runningMove(ctrlclient.ObjectKeyFromObject(pool))
	if !ok || madeMove(pool, known) {
		return
	}
	if err := wfapi.SignalSwitch(ctx, r.temporal, r.scope.Cluster, pool.Namespace, pool.Name); err != nil {
		if !isNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "could not ask the running switch to drop a withdrawn move", "class", known.class, "to", known.to)
		}
		return
	}
	r.metrics.signalled("reresolve")
	ctrl.LoggerFrom(ctx).V(1).Info("asked the running switch to drop a withdrawn move", "class", known.class, "from", known.from, "to", known.to)
}

// madeMove reports whether the pool's status shows k done: the class on
// k's target, or, for a move that only clears a claim, no claim left.
func madeMove(pool *v1alpha1.WorkerPool, k moveKey) bool {
	st := pool.Status.ClassStatus(v1alpha1.SandboxClass(k.class))
	if k.to != "" {
		return st != nil && st.ConfigRef.NameOf() == k.to
	}
	return st == nil || st.PendingConfigRef.NameOf() == ""
}

// plan reads a pool and the configs from r and returns the pool's next
// move, and whether it needs one. The pool is nil when it is gone or in
// deletion; otherwise it is returned also when it needs no move (it is
// where resolution puts it).
func plan(ctx context.Context, r ctrlclient.Reader, key types.NamespacedName) (*v1alpha1.WorkerPool, resolve.Move, bool, error) {
	var pool v1alpha1.WorkerPool
	err := r.Get(ctx, key, &pool)
	if apierrors.IsNotFound(err) {
		// A switch still running for it finds it gone at its next write.
		return nil, resolve.Move{}, false, nil
	}
	if err != nil {
		return nil, resolve.Move{}, false, err
	}
	if pool.DeletionTimestamp != nil {
		// In deletion: no new switch. A claim it holds keeps its config
		// until the pool is gone; the release then lets it go.
		return nil, resolve.Move{}, false, nil
	}
	configs, err := poolwatch.ListConfigs(ctx, r)
	if err != nil {
		return nil, resolve.Move{}, false, err
	}
	move, ok := resolve.NextMove(rollout.KeyOf(&pool), pool.Spec.SandboxClasses, &pool.Status, configs)
	return &pool, move, ok, nil
}

func startMove(ctx context.Context, tc client.Client, scope wfapi.Scope, pool *v1alpha1.WorkerPool, move resolve.Move) error {
	ref := wfapi.PoolRef{Namespace: pool.Namespace, Name: pool.Name, UID: string(pool.UID)}
	return wfapi.StartSwitch(ctx, tc, scope, wfapi.MoveInput(ref, move, pool.Generation, pool.ResourceVersion))
}

// StartNext does once what the starter does for one pool: it plans the
// pool's next move from r and starts its switch. It reports whether it
// started one; wfapi.ErrSwitchRunning when the pool's switch is running.
// Tests that stand in for the starter use it with a live client.
func StartNext(ctx context.Context, r ctrlclient.Reader, tc client.Client, scope wfapi.Scope, key types.NamespacedName) (bool, error) {
	pool, move, needs, err := plan(ctx, r, key)
	if err != nil || !needs {
		return false, err
	}
	if err := startMove(ctx, tc, scope, pool, move); err != nil {
		return false, err
	}
	return true, nil
}

func (r *switchStarter) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("switch-starter").
		// Spec changes, creation (and so the start-up resync), deletion,
		// and the status writes that move a class: a switch's claim and
		// confirm. Condition and replica writes move nothing.
		For(&v1alpha1.WorkerPool{}, builder.WithPredicates(movesChanged)).
		Watches(&v1alpha1.SandboxConfig{}, poolwatch.ConfigEvents{Cache: r.cache}.Handler()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			// A failed start (Temporal unreachable) is retried with backoff,
			// capped so that the changes made during a long outage are
			// started within seconds of its end.
			RateLimiter: startRateLimiter(),
		}).
		Complete(r)
}

// movesChanged passes the pool events that can change the pool's next move.
var movesChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.WorkerPool), e.ObjectNew.(*v1alpha1.WorkerPool)
		return o.Generation != n.Generation || !classRefsEqual(o.Status.SandboxClasses, n.Status.SandboxClasses) ||
			(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}

func classRefsEqual(a, b []v1alpha1.WorkerPoolSandboxClassStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !sameRef(a[i].ConfigRef, b[i].ConfigRef) || !sameRef(a[i].PendingConfigRef, b[i].PendingConfigRef) {
			return false
		}
	}
	return true
}

func sameRef(a, b *v1alpha1.SandboxConfigReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name
}

// isNotFound reports whether Temporal found no running workflow to signal:
// the switch ended meanwhile, which is what asking it was for.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
