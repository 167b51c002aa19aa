package starter

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// staleClaimAfter is how long a pool may hold the claim of its next move
// before the starter starts a switch anyway: a switch under way confirms in
// well under a second, so a claim held this long was most likely left by a
// switch stopped by hand (and if one is still running, the start finds it).
const staleClaimAfter = 30 * time.Second

// startedRecheck is when the starter looks again at a pool it started a
// switch for. The switch's claim and confirm wake the pool; a switch that
// ends, fails or is terminated before its claim writes nothing the starter
// watches, and this look is what plans the pool again. A look that finds
// the switch still running costs one refused start.
const startedRecheck = 5 * time.Second

// The backoff of a move whose start is refused because the pool's switch
// runs (wfapi.ErrSwitchRunning): doubling per refusal of the same move,
// capped, and started over by a start that succeeds or a pool that needs
// nothing. A switch stuck on a failing step for an hour costs its pool one
// refused start per maxSwitchRunningBackoff, not one a second.
const (
	firstSwitchRunningBackoff = time.Second
	maxSwitchRunningBackoff   = 30 * time.Second
)

// claims remembers, per pool, the move the starter last tried and when it
// may try it again, the move the pool's running switch is known to work on
// (started, or asked by a `reresolve` to re-plan), and when it first saw
// the pool hold the claim of its next move. With it the starter neither
// starts a switch again and again beside one that runs (a cache event that
// changed nothing of the move, a refused start) nor waits for ever on a
// switch that ended without a write it watches: every deferral is bounded.
type claims struct {
	mu    sync.Mutex
	now   func() time.Time
	pools map[types.NamespacedName]claimSeen
}

type claimSeen struct {
	tried     moveKey       // the move last started, or refused
	notBefore time.Time     // when tried may be tried again
	backoff   time.Duration // the last refusal's backoff; 0 after a start
	known     moveKey       // the move the running switch works on, as far as the starter knows
	heldSince time.Time     // when the pool was first seen holding its move's claim
}

// moveKey is what makes two moves the same move: the class and the configs.
// Pending and FromDeleting follow from the pool's state as the move goes on.
type moveKey struct {
	class             string
	from, to, abandon string
	set               bool
}

func keyOf(m resolve.Move) moveKey {
	return moveKey{class: string(m.Class), from: m.From, to: m.To, abandon: m.Abandon, set: true}
}

// keyOfRun is the move a switch run was started with (wfapi.RunningSwitch).
func keyOfRun(in wfapi.SwitchInput) moveKey {
	return moveKey{class: string(in.Class), from: in.From, to: in.To, abandon: in.Abandon, set: true}
}

func newClaims() *claims {
	return &claims{now: time.Now, pools: map[types.NamespacedName]claimSeen{}}
}

// wait returns how long to wait before starting move for the pool, or 0 to
// start it now.
func (c *claims) wait(key types.NamespacedName, move resolve.Move) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	now := c.now()
	var wait time.Duration
	if move.To != "" && move.Pending == move.To {
		// The pool holds the claim of this move: its switch is under way.
		if seen.heldSince.IsZero() {
			seen.heldSince = now
		}
		if held := now.Sub(seen.heldSince); held < staleClaimAfter {
			wait = staleClaimAfter - held
		}
	} else {
		seen.heldSince = time.Time{}
	}
	c.pools[key] = seen
	if seen.tried == keyOf(move) && now.Before(seen.notBefore) {
		// Started or refused a moment ago: its switch's writes wake the
		// pool, or the deferral runs out and the move is tried again.
		wait = max(wait, seen.notBefore.Sub(now))
	}
	return wait
}

// started records that move was started for the pool, and returns when to
// look at the pool again.
func (c *claims) started(key types.NamespacedName, move resolve.Move) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	seen.tried, seen.known = keyOf(move), keyOf(move)
	seen.backoff, seen.notBefore = 0, c.now().Add(startedRecheck)
	c.pools[key] = seen
	return startedRecheck
}

// refused records that the start of move was refused because the pool's
// switch runs. It returns when to try again, and whether the running switch
// should be asked to re-plan: it works on another move than this one, or
// the starter does not know which (it started none since its own start).
func (c *claims) refused(key types.NamespacedName, move resolve.Move) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	k := keyOf(move)
	switch {
	case seen.tried != k || seen.backoff == 0:
		seen.backoff = firstSwitchRunningBackoff
	default:
		seen.backoff = min(2*seen.backoff, maxSwitchRunningBackoff)
	}
	seen.tried, seen.notBefore = k, c.now().Add(seen.backoff)
	c.pools[key] = seen
	return seen.backoff, seen.known != k
}

// signalled records that the pool's running switch was asked to re-plan,
// and so now works on move (or on what the pool then asks for).
func (c *claims) signalled(key types.NamespacedName, move resolve.Move) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	seen.known = keyOf(move)
	c.pools[key] = seen
}

// knowsRunning reports whether the starter knows which move the pool's
// running switch works on: one it started or signalled since its own start.
func (c *claims) knowsRunning(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pools[key].known.set
}

// running records the move the pool's running switch was found to work on.
func (c *claims) running(key types.NamespacedName, k moveKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.pools[key]
	seen.known = k
	c.pools[key] = seen
}

// runningMove returns the move the pool's running switch is known to work
// on, if the starter knows one.
func (c *claims) runningMove(key types.NamespacedName) (moveKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.pools[key].known
	return k, k.set
}

// forget drops what was remembered of a pool that needs nothing.
func (c *claims) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pools, key)
}
