package starter

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// rolloutStarter bridges staged rollouts: it starts the rollout workflow of
// a config with spec.rollout once it is the newest default of its class
// (and its rollout has not completed), passes a change of
// spec.rollout.paused on as a `pause` or `resume` signal carrying the
// config's generation, and sends `recheck` to a rollout whose config is no
// longer its class's newest default (or is gone), so that it ends at once
// rather than at its next step. Like the rest of the starter it writes
// nothing to Kubernetes: the workflow writes status.rollout.
type rolloutStarter struct {
	cache    ctrlclient.Reader
	temporal client.Client
	scope    wfapi.Scope
}

func (r *rolloutStarter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1alpha1.SandboxConfig
	if err := r.cache.Get(ctx, req.NamespacedName, &c); err != nil {
		if ctrlclient.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		// Gone: a rollout of it still running stops at its next look.
		return reconcile.Result{}, wfapi.SignalRollout(ctx, r.temporal, r.scope.Cluster, req.Name, wfapi.SignalRecheck, wfapi.RolloutSignal{})
	}
	configs, err := poolwatch.ListConfigs(ctx, r.cache)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := c.Status.Rollout
	ending, _ := rollout.Liveness(&c, resolve.NewestDefault(c.Class(), configs))
	rolling := ending == "" // Liveness ends a config without spec.rollout
	var res reconcile.Result
	switch {
	case rolling:
		if err := wfapi.StartRollout(ctx, r.temporal, r.scope, c.Name); err != nil {
			return reconcile.Result{}, err
		}
		if st != nil && ended(st.Phase) {
			// The run that wrote this phase may not have ended yet: the
			// start above then joined it (a rollout's ID runs one
			// execution at a time), and its end changes no config, so
			// nothing would wake this again. Look until a run of this
			// start writes its own phase.
			ctrl.LoggerFrom(ctx).V(1).Info("rollout restarting after its last run's end", "config", c.Name, "phase", st.Phase)
			return reconcile.Result{RequeueAfter: restartLook}, nil
		}
		if st != nil && st.WorkflowID != "" && c.Generation > st.ObservedGeneration {
			// What a v0.1.0 run acts on; a newer run takes it as a recheck.
			signal := wfapi.SignalResume
			if c.Spec.Rollout.Paused {
				signal = wfapi.SignalPause
			}
			if err := wfapi.SignalRollout(ctx, r.temporal, r.scope.Cluster, c.Name, signal, wfapi.RolloutSignal{Generation: c.Generation}); err != nil {
				return reconcile.Result{}, err
			}
		}
		if needsLook(&c) {
			if err := wfapi.SignalRollout(ctx, r.temporal, r.scope.Cluster, c.Name, wfapi.SignalRecheck, wfapi.RolloutSignal{}); err != nil {
				return reconcile.Result{}, err
			}
		}
		// The start above also restarts a run that is gone (terminated
		// by hand): look again now and then while the rollout is under way.
		res.RequeueAfter = activeResync
	case st != nil && active(st.Phase):
		// No longer its to run, and status says a run is under way: the
		// start brings one up if none runs, to write the end; the recheck
		// makes a running one look at once.
		if err := wfapi.StartRollout(ctx, r.temporal, r.scope, c.Name); err != nil {
			return reconcile.Result{}, err
		}
		if err := wfapi.SignalRollout(ctx, r.temporal, r.scope.Cluster, c.Name, wfapi.SignalRecheck, wfapi.RolloutSignal{}); err != nil {
			return reconcile.Result{}, err
		}
		res.RequeueAfter = activeResync
	}
	ctrl.LoggerFrom(ctx).V(1).Info("rollout bridged", "config", c.Name, "rolling", rolling)
	return res, nil
}

// needsLook reports whether a rolling config changed in a way its rollout
// has not taken in: no status of this incarnation yet (new, or created
// again under its name while an old run may still be bound to the old
// one), a spec generation newer than the one its status observed, or a
// request (resume, pause, promote, abort, retry) not answered yet.
func needsLook(c *v1alpha1.SandboxConfig) bool {
	st := c.Status.Rollout
	if st == nil {
		return true
	}
	return c.Generation > st.ObservedGeneration || rollout.PendingRequests(c).Any()
}

// activeResync is how often the starter looks again at a rollout under
// way with no event: a phase whose run is gone is corrected within it.
const activeResync = 30 * time.Second

// restartLook is how soon the starter looks again at a rollout to restart
// whose last run had written its end but may not have ended.
const restartLook = time.Second

// ended reports whether a run that wrote this phase ends with it, so that a
// config rolling again needs a new run.
func ended(p v1alpha1.RolloutPhase) bool {
	return p == v1alpha1.RolloutStopped || p == v1alpha1.RolloutSuperseded
}

// active reports whether a rollout in this phase has a workflow running.
func active(p v1alpha1.RolloutPhase) bool {
	switch p {
	case v1alpha1.RolloutProgressing, v1alpha1.RolloutPaused, v1alpha1.RolloutBaking, v1alpha1.RolloutHalted,
		v1alpha1.RolloutAwaitingApproval, v1alpha1.RolloutAborted, v1alpha1.RolloutRolledBack, v1alpha1.RolloutAwaitingClusters:
		return true
	}
	return false
}

func (r *rolloutStarter) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("rollout-starter").
		// Every event of a config, and of any config, wakes the configs
		// with a rollout: a new default of the class supersedes one.
		Watches(&v1alpha1.SandboxConfig{}, handler.EnqueueRequestsFromMapFunc(r.withRollouts)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: startRateLimiter()}).
		Complete(r)
}

// withRollouts maps a config event to the config itself and every config
// with spec.rollout or a rollout under way.
func (r *rolloutStarter) withRollouts(ctx context.Context, o ctrlclient.Object) []reconcile.Request {
	reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	var list v1alpha1.SandboxConfigList
	if err := r.cache.List(ctx, &list, ctrlclient.UnsafeDisableDeepCopy); err != nil { // only read
		ctrl.LoggerFrom(ctx).Error(err, "listing SandboxConfigs with a rollout")
		return reqs
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Name != o.GetName() && (c.Spec.Rollout != nil || (c.Status.Rollout != nil && active(c.Status.Rollout.Phase))) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
		}
	}
	return reqs
}
