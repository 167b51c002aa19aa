package starterapp

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
)

// staleClaimAfter is how long a pool may hold the claim of its next move
// before the starter starts a switch anyway: a switch under way confirms in
// well under a second, so a claim held this long was most likely left by a
// switch stopped by hand (and if one is still running, the start finds it).
const staleClaimAfter = 30 * time.Second

// claims remembers, per pool, what the starter last started and when it
// first saw the pool hold the claim of its next move, so that it neither
// starts a switch again on the state it already started one from (a cache
// event that changed nothing of the pool) nor starts one beside a switch
// whose claim it sees.
type claims struct {
	mu    sync.Mutex
	now   func() time.Time
	pools map[types.NamespacedName]claimSeen
}

type claimSeen struct {
	startedAt string    // the pool's resourceVersion the last start was decided on
	heldSince time.Time // when the pool was first seen holding its move's claim
}

func newClaims() *claims {
	return &claims{now: time.Now, pools: map[types.NamespacedName]claimSeen{}}
}

// wait returns how long to wait before starting move for the pool, or 0 to
// start it now.
func (c *claims) wait(key types.NamespacedName, pool *v1alpha1.WorkerPool, move resolve.Move) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	if seen.startedAt == pool.ResourceVersion {
		// Started from this very state: its switch's claim will move it.
		return switchRunningRecheck
	}
	if move.To == "" || move.Pending != move.To {
		seen.heldSince = time.Time{}
		c.pools[key] = seen
		return 0
	}
	now := c.now()
	if seen.heldSince.IsZero() {
		seen.heldSince = now
		c.pools[key] = seen
	}
	if held := now.Sub(seen.heldSince); held < staleClaimAfter {
		return staleClaimAfter - held
	}
	return 0
}

// started records that a switch was started from the pool as it is.
func (c *claims) started(key types.NamespacedName, pool *v1alpha1.WorkerPool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pools[key] = claimSeen{startedAt: pool.ResourceVersion}
}

// forget drops what was remembered of a pool that needs nothing.
func (c *claims) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pools, key)
}
