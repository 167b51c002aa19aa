package poolwatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

type workqueueRL = workqueue.TypedRateLimitingInterface[reconcile.Request]

// ConfigEvents maps SandboxConfig events to the pools they may affect,
// found through the indexes Index sets up on Cache.
type ConfigEvents struct {
	Cache ctrlclient.Reader
}

// Handler is the event handler of a controller of pools that watches
// SandboxConfigs.
func (r ConfigEvents) Handler() handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueRL) {
			r.enqueueUsers(ctx, q, nil, e.Object.(*v1alpha1.SandboxConfig))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueRL) {
			oldC, newC := e.ObjectOld.(*v1alpha1.SandboxConfig), e.ObjectNew.(*v1alpha1.SandboxConfig)
			if outcomeRelevant(oldC, newC) {
				r.enqueueUsers(ctx, q, oldC, newC)
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
// spec or status names it and, when the event may change which config a
// class's unpinned pools resolve to (see unpinnedClassesToWake), the
// unpinned pools of that class. old is the config before the event (nil for
// a create; its last state for a deletion), cur after it (nil for a
// deletion).
func (r ConfigEvents) enqueueUsers(ctx context.Context, q workqueueRL, old, cur *v1alpha1.SandboxConfig) {
	c := cur
	if c == nil {
		c = old
	}
	seen := map[types.NamespacedName]bool{}
	add := func(field, value string) {
		// Every unpinned pool of a class, on a new default: read for its
		// key only, so the cache's own objects, not deep copies.
		var pools v1alpha1.WorkerPoolList
		if err := r.Cache.List(ctx, &pools, ctrlclient.MatchingFields{field: value}, ctrlclient.UnsafeDisableDeepCopy); err != nil {
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
	add(SpecConfigIndex, c.Name)
	add(StatusConfigIndex, c.Name)
	others := func() []resolve.Config { return r.otherConfigs(ctx, c.Name) }
	for _, class := range unpinnedClassesToWake(old, cur, others) {
		add(UnpinnedClassIndex, string(class))
	}
}

// otherConfigs lists every config but the named one from the cache, as
// resolution sees them; nil when the cache cannot say, which wakes as if the
// config were the newest default.
func (r ConfigEvents) otherConfigs(ctx context.Context, name string) []resolve.Config {
	all, err := ListConfigs(ctx, r.Cache)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "waking every unpinned pool of the class", "config", name)
		return nil
	}
	others := make([]resolve.Config, 0, len(all))
	for _, c := range all {
		if c.Name != name {
			others = append(others, c)
		}
	}
	return others
}

// unpinnedClassesToWake returns the classes whose unpinned pools may resolve
// differently after a config changed from old to cur (old nil: created; cur
// nil: deleted), given the other configs, which it lists only when it must
// (a config that stops being a candidate): most events need no list.
//
// An unpinned class resolves to the newest class default not in deletion
// (resolve.NewestDefault), or, when there is none, keeps the config its
// status names: that second case, and every pinned pool, concerns only pools
// whose status or spec names the config, which enqueueUsers wakes anyway. So
// the unpinned pools need waking only when the newest default may change:
//   - when the config is a default candidate after the event (created,
//     annotated, moved into the class), as it may be the newest one;
//   - when it stops being one (deletion mark, final deletion, annotation
//     removed, class changed) and it was the newest: removing any other
//     candidate leaves the newest as it was. This is what spares every pool of
//     a class a pass when an old default is deleted after the pools moved on.
//
// others may be newer than the event (the cache moves on before the handler
// runs). That is still safe: a newer candidate seen there either was one when
// the pools last resolved, so they did not resolve to this config, or became
// one since, which wakes them again.
func unpinnedClassesToWake(old, cur *v1alpha1.SandboxConfig, others func() []resolve.Config) []v1alpha1.SandboxClass {
	var classes []v1alpha1.SandboxClass
	if isCandidate(cur) {
		classes = append(classes, classOf(cur))
	}
	if isCandidate(old) && !(isCandidate(cur) && classOf(cur) == classOf(old)) {
		before := append(others(), resolve.ConfigFrom(old))
		if resolve.NewestDefault(classOf(old), before) == old.Name {
			classes = append(classes, classOf(old))
		}
	}
	return classes
}

// isCandidate reports whether resolution counts c as a class default.
func isCandidate(c *v1alpha1.SandboxConfig) bool {
	return c != nil && c.IsClassDefault() && !c.IsDeleting()
}

// outcomeRelevant reports whether a config update can change any pool's
// resolution: its class, its class-default annotation, its deletion, its
// finalizers while it is in deletion, or what its staged rollout admits
// (spec.rollout added or removed, status.rollout's step, last admitted pool
// or completion: the unpinned pools of a class whose default it is then
// resolve anew, and the waiting ones' condition names the new step). Everything else (versions, assets) does
// not move pools. Resolution reads the finalizer only of a config in deletion
// (whether a pool may keep it), so the finalizer a switch adds to its target
// wakes nobody: otherwise every switch to a new default would wake every
// unpinned pool of the class a second time.
func outcomeRelevant(old, cur *v1alpha1.SandboxConfig) bool {
	return classOf(old) != classOf(cur) ||
		old.IsClassDefault() != cur.IsClassDefault() ||
		old.IsDeleting() != cur.IsDeleting() ||
		(cur.IsDeleting() && old.IsProtected() != cur.IsProtected()) ||
		!equality.Semantic.DeepEqual(rollout.AdmissionOf(old), rollout.AdmissionOf(cur))
}

func classOf(c *v1alpha1.SandboxConfig) v1alpha1.SandboxClass { return c.Class() }

// ListConfigs lists every SandboxConfig from r, as resolution sees them.
// From a cache it reads the cache's own objects, not copies: ConfigsFrom
// only reads them, into values of its own.
func ListConfigs(ctx context.Context, r ctrlclient.Reader) ([]resolve.Config, error) {
	var list v1alpha1.SandboxConfigList
	if err := r.List(ctx, &list, ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	return resolve.ConfigsFrom(list.Items), nil
}
