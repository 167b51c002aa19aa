// Package poolkeeper keeps, for every WorkerPool, what needs no durable
// history: its worker Deployment, the replica fields and observedGeneration
// of its status, the Resolved condition of the classes that need no switch,
// and the pool's DeploymentApplied condition, with the Warning of a failure
// when it appears (a Deployment that cannot be applied is also retried on a
// backoff, since nothing else would wake the pool). It is a plain
// level-triggered controller in the worker process: a server-side apply and
// a status write guarded by the resourceVersion are idempotent, so a crash
// loses nothing a fresh look would not redo, and a scale or template edit
// costs Temporal nothing and never waits behind a switch.
//
// Config moves are not its business: a class that must move, or that holds a
// claim, belongs to its switch workflow (see the workflows package), which
// writes the class's configRef, pendingConfigRef and, when it ends, its
// condition. This reconciler never writes a config name; it only drops one
// that may not be kept (a config gone, of another class, or in deletion
// without the protection finalizer).
package poolkeeper

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// +kubebuilder:rbac:groups=ate.dev,resources=workerpools;sandboxconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=ate.dev,resources=workerpools/status,verbs=get;update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create

// EventRecorder records an event once per name: events.Recorder, the
// product's one recorder, which the switches' activities record through
// too, so that a failure both report is one event.
type EventRecorder interface {
	Record(ctx context.Context, ev events.Event) error
}

// Reconciler keeps pools' Deployments and plain status.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Live reads from the API server itself (the manager's API reader): a
	// config name is dropped only once a live read confirms the config may
	// not be kept, never on the cache's word alone (the pool and config
	// informers are independent, so the cache may not have a config yet).
	Live        ctrlclient.Reader
	Deployments appsv1client.DeploymentsGetter
	Events      EventRecorder

	reported reportedSet
	upToDate upToDateMemo
}

// maxRetryBackoff caps the backoff of a pool whose write keeps failing.
const maxRetryBackoff = 30 * time.Second

// SetupWithManager registers the reconciler: pools, their Deployments, and
// the configs that may change how pools resolve.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("pool-keeper").
		For(&v1alpha1.WorkerPool{}).
		Owns(&appsv1.Deployment{}).
		Watches(&v1alpha1.SandboxConfig{}, poolwatch.ConfigEvents{Cache: mgr.GetClient()}.Handler()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](50*time.Millisecond, maxRetryBackoff),
		}).
		Complete(r)
}

// Reconcile brings one pool's Deployment and plain status to what its spec,
// its status's config names and the configs say.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool v1alpha1.WorkerPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if pool.DeletionTimestamp != nil {
		// Being deleted: the garbage collector removes its Deployment;
		// nothing is applied or written for it any more.
		return reconcile.Result{}, nil
	}
	configs, err := poolwatch.ListConfigs(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("resolving WorkerPool %s: %w", req, err)
	}

	if configs, err = r.confirmDrops(ctx, &pool, configs); err != nil {
		return reconcile.Result{}, err
	}

	before := pool.Status.DeepCopy()
	switching := settleClasses(&pool, configs)
	k, err := r.keepDeployment(ctx, &pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	if d := k.deployment; d != nil {
		pool.Status.Replicas, pool.Status.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
		pool.Status.Selector = selector(d)
	}
	if !switching {
		// A generation whose spec asks for a move not made yet is not
		// acted on: the look after the switch's confirm raises it.
		pool.Status.ObservedGeneration = max(pool.Status.ObservedGeneration, pool.Generation)
	}
	poolstatus.SetSummary(&pool)
	if k.condition != nil {
		// After the summary, so a new pool's status lists the summary first.
		poolstatus.SetPoolCondition(&pool.Status, *k.condition)
	}
	if d := k.deployment; d != nil {
		if c := availableCondition(&pool, d); c != nil {
			poolstatus.SetPoolCondition(&pool.Status, *c)
		}
	}
	if !equality.Semantic.DeepEqual(before, &pool.Status) {
		// Guarded by the cached resourceVersion: a switch that wrote since
		// makes this conflict, and the pool is looked at again.
		if err := r.Client.Status().Update(ctx, &pool); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // SA1019: the queue's rate-limited backoff, which a fixed RequeueAfter would replace
			}
			return reconcile.Result{}, fmt.Errorf("writing the status of WorkerPool %s: %w", req, err)
		}
	}
	// Events follow the write they report.
	if err := r.reportFailures(ctx, &pool); err != nil {
		return reconcile.Result{}, err
	}
	// A Deployment not as wanted is retried on the controller's rate
	// limiter (50 ms doubling to maxRetryBackoff), reported above once.
	return reconcile.Result{}, k.failure
}

// reportFailures records the Warning of every failure the pool's status
// shows, once per appearance (events.FailureWarning): derived from the
// status, not from what this pass changed, so a worker killed between a
// status write and its event records the event on its next look, and a
// failure a switch's roll back wrote is the same event as the one it
// records. Appearances already recorded by this process are skipped
// without a request.
func (r *Reconciler) reportFailures(ctx context.Context, pool *v1alpha1.WorkerPool) error {
	ref := wfapi.PoolRef{Namespace: pool.Namespace, Name: pool.Name, UID: string(pool.UID)}
	for _, st := range pool.Status.SandboxClasses {
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		if err := r.record(ctx, events.FailureWarning(ref, st.Name, c.Reason, c.Message, c.LastTransitionTime)); err != nil {
			return err
		}
	}
	if c := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.ConditionDeploymentApplied); c != nil && c.Status == metav1.ConditionFalse {
		return r.record(ctx, deploymentWarning(ref, c))
	}
	return nil
}

// settleClasses sets the Resolved condition of every class that needs no
// switch, removes the SwitchStepFailing condition of one on the config its
// spec resolves to, and drops a config name that may not be kept
// (confirmDrops has confirmed it live). It reports whether a class needs a
// switch.
func settleClasses(pool *v1alpha1.WorkerPool, configs []resolve.Config) (switching bool) {
	for _, entry := range pool.Spec.SandboxClasses {
		p := resolve.PlanClass(rollout.KeyOf(pool), entry, &pool.Status, configs)
		if p.NeedsSwitch() {
			switching = true
			continue // its switch's to write
		}
		res := p.Result
		if res.Target == "" && p.Current != "" {
			poolstatus.EnsureClass(&pool.Status, entry.Name).ConfigRef = nil
		}
		if res.Resolved && res.Target == p.Current {
			// Where its spec puts it: a failing step is of a move no
			// longer wanted (the class default changed back while a
			// switch could not protect the new one), and its condition
			// would keep the summary False. A switch still failing on
			// that move sets it again.
			if st := pool.Status.ClassStatus(entry.Name); st != nil {
				meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSwitchStepFailing)
			}
		}
		poolstatus.SetClassCondition(&pool.Status, entry.Name,
			poolstatus.ClassCondition(res.Resolved, res.Reason, res.Message, pool.Generation))
	}
	return switching
}

// confirmDrops reads live a pinned config the cache lacks, and every config
// that the cached configs would make a class of the pool drop (gone, of another class, or in deletion without
// the finalizer, as the cache says), and returns configs with the live
// answer in its place: present and keepable, the class keeps it (and
// resolves against it); gone, it is dropped. A pool on its config costs no
// read.
func (r *Reconciler) confirmDrops(ctx context.Context, pool *v1alpha1.WorkerPool, configs []resolve.Config) ([]resolve.Config, error) {
	listedLive := false
	for _, entry := range pool.Spec.SandboxClasses {
		var err error
		// A pinned config the cache does not hold yet (created just before
		// the pool, its watch event not in) would read as
		// SandboxConfigNotFound, with a Warning for a failure that never
		// was: a live read settles it. Only a miss costs the read.
		// A name no config can have (not a DNS subdomain: "ns/name", "..",
		// "a%b", from a pool stored before the CRD refused it) is not
		// found, as resolution says, and needs no read: a GET could not
		// even send it, and failing the look on it would stop the pool.
		if pinned := entry.ConfigRef.NameOf(); pinned != "" && len(validation.IsDNS1123Subdomain(pinned)) == 0 &&
			!slices.ContainsFunc(configs, func(c resolve.Config) bool { return c.Name == pinned }) {
			if configs, err = r.withLive(ctx, configs, pinned); err != nil {
				return nil, fmt.Errorf("reading SandboxConfig %q, pinned by WorkerPool %s/%s, live: %w", pinned, pool.Namespace, pool.Name, err)
			}
		}
		if configs, err = r.confirmSeenDeletion(ctx, pool, entry, configs); err != nil {
			return nil, err
		}
		p := resolve.PlanClass(rollout.KeyOf(pool), entry, &pool.Status, configs)
		if !listedLive && !p.NeedsSwitch() && p.Current == "" && p.Result.Reason == v1alpha1.ReasonDefaultConfigNotFound {
			// Likewise a class default the cache does not hold yet: a new
			// unpinned pool would read DefaultConfigNotFound, Warning and
			// all. A live list settles it (once per look, for every class);
			// only a pool with no config and no default in the cache costs it.
			live, err := poolwatch.ListConfigs(ctx, r.Live)
			if err != nil {
				return nil, fmt.Errorf("looking for the %s default of WorkerPool %s/%s live: %w", entry.Name, pool.Namespace, pool.Name, err)
			}
			configs, listedLive = live, true
			continue
		}
		if p.NeedsSwitch() || p.Result.Target != "" || p.Current == "" {
			continue
		}
		if configs, err = r.withLive(ctx, configs, p.Current); err != nil {
			return nil, fmt.Errorf("reading SandboxConfig %q of WorkerPool %s/%s live before dropping it: %w", p.Current, pool.Namespace, pool.Name, err)
		}
	}
	return configs, nil
}

// withLive returns configs with the config named name as the API server
// has it: the live copy in place of the cached one (or added, where the
// cache lacked it), or none where the API server has none. The error is the
// read's; the caller says why it read.
func (r *Reconciler) withLive(ctx context.Context, configs []resolve.Config, name string) ([]resolve.Config, error) {
	var live v1alpha1.SandboxConfig
	err := r.Live.Get(ctx, ctrlclient.ObjectKey{Name: name}, &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	configs = slices.DeleteFunc(slices.Clone(configs), func(c resolve.Config) bool { return c.Name == name })
	if err == nil {
		configs = append(configs, resolve.ConfigFrom(&live))
	}
	return configs, nil
}

// confirmSeenDeletion reads live a config the class's status has seen in
// deletion (Resolved False, SandboxConfigDeleting: the pinned config, or,
// unpinned, the one the class is on) while the cache still holds it
// without a deletionTimestamp. The pool and config informers are
// independent: a switch that read the config live can write the pool, and
// its event reach this look, before the config's own event does. Resolved
// from the cache, the class would read Resolved=True, and the config's
// event would then take it back with a second Warning of the same failure
// (a new transition time). A deletion is never undone, so the live read
// settles which is behind: in deletion, the live copy replaces the cached
// one; gone since, the cached one goes; not in deletion (deleted and
// created again), the cache was right. Only this disagreement costs the
// read.
func (r *Reconciler) confirmSeenDeletion(ctx context.Context, pool *v1alpha1.WorkerPool, entry v1alpha1.WorkerPoolSandboxClass, configs []resolve.Config) ([]resolve.Config, error) {
	st := pool.Status.ClassStatus(entry.Name)
	if st == nil {
		return configs, nil
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSandboxConfigDeleting {
		return configs, nil
	}
	name := entry.ConfigRef.NameOf()
	if name == "" {
		name = st.ConfigRef.NameOf()
	}
	i := slices.IndexFunc(configs, func(c resolve.Config) bool { return c.Name == name })
	if i < 0 || configs[i].Deleting {
		return configs, nil
	}
	configs, err := r.withLive(ctx, configs, name)
	if err != nil {
		return nil, fmt.Errorf("reading SandboxConfig %q live: the status of WorkerPool %s/%s has seen it in deletion, the cache has not: %w", name, pool.Namespace, pool.Name, err)
	}
	return configs, nil
}

// keepDeployment applies the pool's Deployment when it is not as wanted,
// and says how it is. A new pool is due one once every class has a config;
// once it exists it is kept as wanted whatever resolution says, so scaling
// and template edits keep working while a class does not resolve. A
// failure to build or apply it, or a Deployment of its name that something
// else controls, is an outcome (a condition to write and report, and a
// retry), not an error; an error is a read that failed.
func (r *Reconciler) keepDeployment(ctx context.Context, pool *v1alpha1.WorkerPool) (kept, error) {
	d, err := r.currentDeployment(ctx, pool)
	switch {
	case err != nil:
		return kept{}, err
	case d == nil:
		if !hasEveryConfig(pool) {
			return kept{}, nil
		}
	case !metav1.IsControlledBy(d, pool) && !controlledByEarlierPool(d, pool):
		if !hasEveryConfig(pool) {
			return kept{}, nil // not due one yet: nothing to say
		}
		return notOwned(pool, d), nil
	case !metav1.IsControlledBy(d, pool):
		// Left by a pool of the same name deleted before (the garbage
		// collector had not removed it yet): the apply takes it over.
	default:
		if r.upToDate.holds(pool, d) {
			return kept{deployment: d, condition: appliedCondition(pool)}, nil
		}
		if upToDate, err := deployment.CachedUpToDate(d, pool); err == nil && upToDate {
			r.upToDate.set(pool, d)
			return kept{deployment: d, condition: appliedCondition(pool)}, nil
		}
	}
	if c := invalidAtGeneration(pool); c != nil {
		res := kept{condition: c}
		if d != nil && metav1.IsControlledBy(d, pool) {
			res.deployment = d
		}
		return res, nil
	}
	applied, err := deployment.Apply(ctx, r.Deployments, pool)
	if err != nil {
		if ctx.Err() != nil {
			return kept{}, err // stopping: nothing to report
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is being deleted, the pool with it (the
			// namespace controller may take the Deployment first): nothing
			// to apply, report or retry, as for a pool in deletion.
			return kept{}, nil
		}
		res := applyFailed(pool, err)
		if d != nil && metav1.IsControlledBy(d, pool) {
			res.deployment = d // its status is still the pool's to mirror
		}
		return res, nil
	}
	r.upToDate.set(pool, applied)
	return kept{deployment: applied, condition: appliedCondition(pool)}, nil
}

// currentDeployment returns the Deployment of the pool's name, as the cache
// keeps it (deployment.ForCache), or nil. The cache answers, but a miss is
// confirmed by a live read: a Deployment created by someone else a moment
// ago may not be in the cache yet, and the forced apply that follows a miss
// would take it over.
func (r *Reconciler) currentDeployment(ctx context.Context, pool *v1alpha1.WorkerPool) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	err := r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(pool), &d)
	if err == nil {
		return &d, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the Deployment of WorkerPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	if !hasEveryConfig(pool) {
		return nil, nil // no apply follows
	}
	live, err := r.Deployments.Deployments(pool.Namespace).Get(ctx, pool.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Deployment of WorkerPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	// In the cache's form, which the up-to-date check reads.
	if _, err := deployment.ForCache(live); err != nil {
		return nil, fmt.Errorf("reading the Deployment of WorkerPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return live, nil
}

// upToDateMemo remembers, per pool, the pool generation and Deployment
// resourceVersion last found (or made) as wanted: the Deployment is built
// from the pool's name, UID and spec alone, so while neither changes it is
// as wanted still, and a pool whose status a switch writes costs no
// comparison of managed fields.
type upToDateMemo struct {
	mu    sync.Mutex
	pools map[types.UID]deploymentSeen
}

type deploymentSeen struct {
	generation      int64
	resourceVersion string
}

func (m *upToDateMemo) holds(pool *v1alpha1.WorkerPool, d *appsv1.Deployment) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen, ok := m.pools[pool.UID]
	return ok && seen.generation == pool.Generation && seen.resourceVersion == d.ResourceVersion
}

func (m *upToDateMemo) set(pool *v1alpha1.WorkerPool, d *appsv1.Deployment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pools == nil || len(m.pools) >= maxReported {
		m.pools = map[types.UID]deploymentSeen{}
	}
	m.pools[pool.UID] = deploymentSeen{generation: pool.Generation, resourceVersion: d.ResourceVersion}
}

// controlledByEarlierPool reports whether d is controlled by a WorkerPool of
// pool's name: an earlier incarnation of it.
func controlledByEarlierPool(d *appsv1.Deployment, pool *v1alpha1.WorkerPool) bool {
	owner := metav1.GetControllerOf(d)
	return owner != nil && owner.Kind == "WorkerPool" && owner.Name == pool.Name &&
		strings.HasPrefix(owner.APIVersion, v1alpha1.GroupVersion.Group+"/")
}

func hasEveryConfig(pool *v1alpha1.WorkerPool) bool {
	if len(pool.Spec.SandboxClasses) == 0 {
		return false
	}
	for _, entry := range pool.Spec.SandboxClasses {
		if st := pool.Status.ClassStatus(entry.Name); st == nil || st.ConfigRef == nil {
			return false
		}
	}
	return true
}

func selector(d *appsv1.Deployment) string {
	if d.Spec.Selector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}

// reportedSet remembers the event names this process has recorded, so that
// a pool that keeps failing costs no request per look. It forgets all once
// it grows large: forgetting costs one create that finds the event there.
type reportedSet struct {
	mu    sync.Mutex
	names map[string]struct{}
}

const maxReported = 50000

func (s *reportedSet) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.names[name]
	return ok
}

func (s *reportedSet) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil || len(s.names) >= maxReported {
		s.names = map[string]struct{}{}
	}
	s.names[name] = struct{}{}
}
