package rollout

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// ClassPool is an unpinned pool of a class as a rollout watches it.
type ClassPool struct {
	Pool
	// UID and ResourceVersion name the incarnation and the state read: the
	// rollout's wait tells by them whether a cache still shows the state a
	// live read was compared with.
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	// Pending is the config its class claimed and has not confirmed.
	Pending string `json:"pending,omitempty"`
	// Available is the pool's Available condition True, AvailableMessage
	// its message (or why it has none).
	Available        bool   `json:"available,omitempty"`
	AvailableMessage string `json:"availableMessage,omitempty"`
	// Failing says why the class's switch is failing: a SwitchStepFailing
	// condition True, or a Resolved condition False (a switch that rolled
	// back); "" when it is not.
	Failing string `json:"failing,omitempty"`
	// FailingSince is when that condition last changed.
	FailingSince time.Time `json:"failingSince,omitempty"`
}

// ClassPools lists, in rollout order, the pools of r whose class follows
// its class default: pinned pools and pools in deletion are no rollout's.
// It lists every WorkerPool and filters: for a reader without the
// worker's field indexes (a live client, the kubectl plugin's paged
// reader, a preview). The rollout's activities read the worker's informer
// cache through its index instead (poolwatch.ClassPools), which hands over
// only the class's unpinned pools, never the fleet.
func ClassPools(ctx context.Context, r ctrlclient.Reader, class v1alpha1.SandboxClass) ([]ClassPool, error) {
	// Every pool, only read (into values of its own): from a cache, the
	// cache's own objects rather than copies of them all.
	var list v1alpha1.WorkerPoolList
	if err := r.List(ctx, &list, ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the WorkerPools of sandbox class %q: %w", class, err)
	}
	return ClassPoolsOf(list.Items, class), nil
}

// ClassPoolsOf is ClassPools on pools already read: those of items whose
// class follows its class default, in rollout order.
func ClassPoolsOf(items []v1alpha1.WorkerPool, class v1alpha1.SandboxClass) []ClassPool {
	var out []ClassPool
	for i := range items {
		if cp, ok := ClassPoolOf(&items[i], class); ok {
			out = append(out, cp)
		}
	}
	SortClassPools(out)
	return out
}

// ClassPoolOf is one pool as a rollout of class watches it; false when it
// is no rollout's: in deletion, pinned, or without the class.
func ClassPoolOf(wp *v1alpha1.WorkerPool, class v1alpha1.SandboxClass) (ClassPool, bool) {
	if wp.DeletionTimestamp != nil || !followsDefault(wp, class) {
		return ClassPool{}, false
	}
	cp := ClassPool{Pool: Pool{Key: KeyOf(wp)}, UID: wp.UID, ResourceVersion: wp.ResourceVersion}
	if st := wp.Status.ClassStatus(class); st != nil {
		cp.Current, cp.Pending = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf()
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing); c != nil && c.Status == metav1.ConditionTrue {
			cp.Failing, cp.FailingSince = fmt.Sprintf("%s: %s", c.Reason, c.Message), c.LastTransitionTime.Time
		} else if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionFalse {
			cp.Failing, cp.FailingSince = fmt.Sprintf("%s: %s", c.Reason, c.Message), c.LastTransitionTime.Time
		}
	}
	switch c := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionAvailable); {
	case c == nil:
		cp.AvailableMessage = "no Available condition yet"
	default:
		cp.Available, cp.AvailableMessage = c.Status == metav1.ConditionTrue, fmt.Sprintf("Available %s (%s): %s", c.Status, c.Reason, c.Message)
	}
	return cp, true
}

// SortClassPools puts pools in rollout order.
func SortClassPools(pools []ClassPool) {
	plain := make([]Pool, len(pools))
	for i := range pools {
		plain[i] = pools[i].Pool
	}
	byKey := make(map[PoolKey]ClassPool, len(pools))
	for _, p := range pools {
		byKey[p.Key] = p
	}
	Sort(plain)
	for i := range plain {
		pools[i] = byKey[plain[i].Key]
	}
}

// Plain returns the planner's view of the pools.
func Plain(pools []ClassPool) []Pool {
	out := make([]Pool, len(pools))
	for i := range pools {
		out[i] = pools[i].Pool
	}
	return out
}

func followsDefault(wp *v1alpha1.WorkerPool, class v1alpha1.SandboxClass) bool {
	for _, e := range wp.Spec.SandboxClasses {
		if e.Name == class {
			return e.ConfigRef == nil
		}
	}
	return false
}
