package activities

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
)

// writtenPools holds the pools as this worker's last status writes left
// them, each at the resourceVersion its write returned, for the next step
// of the same switch: Confirm runs right after Claim in the same workflow
// task and starts from the version the claim wrote, which the informer
// cache has usually not received yet. A resourceVersion names one state of
// an object, and the response to the write is that state, so starting from
// it is what starting from the cache at that version is (see updateStatus):
// the write that follows is guarded by the version all the same. Without
// it, every confirm read its pool live (0.6 reads per switch in the bench,
// docs/decisions/0015-switch-overhead.md).
//
// An entry is taken by the read that uses it, and the store holds at most
// writtenPoolsMax of them (a write no step follows up, such as a confirm's,
// is dropped when the store is full), so it costs a bounded amount of
// memory whatever the fleet's size. The zero value is empty and ready.
type writtenPools struct {
	mu    sync.Mutex
	pools map[types.NamespacedName]*v1alpha1.WorkerPool
}

// writtenPoolsMax bounds the store: a worker runs at most a few hundred
// switches at once, each with one write pending a next step.
const writtenPoolsMax = 512

// put records the pool as a write returned it.
func (w *writtenPools) put(pool *v1alpha1.WorkerPool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pools == nil {
		w.pools = map[types.NamespacedName]*v1alpha1.WorkerPool{}
	}
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}
	if _, ok := w.pools[key]; !ok && len(w.pools) >= writtenPoolsMax {
		for k := range w.pools { // any one: maps iterate in no set order
			delete(w.pools, k)
			break
		}
	}
	w.pools[key] = pool.DeepCopy()
}

// take hands over the pool key's written copy if it is at resourceVersion
// rv, and forgets the key's copy either way: a step asks for the version
// it knows once, and an older copy is of no further use.
func (w *writtenPools) take(key types.NamespacedName, rv string) (*v1alpha1.WorkerPool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pools[key]
	if !ok {
		return nil, false
	}
	delete(w.pools, key)
	return p, p.ResourceVersion == rv
}
