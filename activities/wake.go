package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// WakeInput names the configs a switch may have left without users, and
// the pool it wrote: its own write is what a wake-up waits for in the cache.
type WakeInput struct {
	Pool    wfapi.PoolRef `json:"pool"`
	Configs []string      `json:"configs"`
}

// Bounds of WakeReleases' wait for the worker's cache to show the switch's
// own write: it lands there milliseconds after the write, so the bound only
// matters for a cache that lags, and it is short enough to stay well inside
// the switch's workflow task (see localRetryWindow in workflows).
const (
	ownWriteWait = 2 * time.Second
	ownWritePoll = 20 * time.Millisecond
)

// wakeQuiet is how long after waking a config's release a worker wakes it
// no more: the last switches of a fleet that all run at once each see the
// others' writes with their own, and all find themselves last.
const wakeQuiet = 5 * time.Second

// WakeReleases wakes the release workflow of each named config that is in
// deletion and still protected, when the switch that wrote in.Pool may have
// removed its last user: a switch that moved a class off a config, or
// dropped a claim on one. It wakes a release only when the worker's cache
// shows no pool but in.Pool naming the config, and at most once in
// wakeQuiet per worker, so the switches that move a fleet off a deleted
// default wake its release once, not once each
// (docs/decisions/0014-release-fan-in.md). When the cache still shows
// in.Pool naming a config in deletion, it waits, up to ownWriteWait, for
// the cache to show the switch's own write (in.Pool no longer naming it,
// or gone); at the bound it wakes the release anyway, since a lagging
// cache and a pool still using the config look alike and a spare look
// costs one signal.
//
// What it skips, the release starter covers: two last switches that run at
// once may each see the other's pool before its write reaches the cache,
// and both skip; a release woken within wakeQuiet may have looked before
// the later switch's write. The starter wakes a release when its cache
// shows the count of users reach zero, and the release's fallback timer
// covers a starter that is down.
func (a *Activities) WakeReleases(ctx context.Context, in WakeInput) error {
	for _, name := range in.Configs {
		others, ownShown, err := a.cachedUsers(ctx, in.Pool, name)
		if err != nil {
			return err
		}
		if others {
			continue // its own move, or the starter, wakes the release
		}
		c, err := a.ReadConfig(ctx, name)
		if err != nil {
			return err
		}
		if c == nil || !c.Deleting || !c.Protected {
			continue
		}
		if ownShown {
			if others, err = a.awaitOwnWrite(ctx, in.Pool, name); err != nil {
				return err
			}
			if others {
				continue
			}
		}
		if !a.wakes.claim(name, time.Now()) {
			continue
		}
		if err := wfapi.SignalRelease(ctx, a.Temporal, a.Scope, name); err != nil {
			a.wakes.drop(name)
			return err
		}
	}
	return nil
}

// cachedUsers says whether the worker's cache shows a pool other than own
// naming config, and whether it shows own naming it. It counts only: the
// listed pools are the cache's own objects, not copies, and two are enough
// to tell.
func (a *Activities) cachedUsers(ctx context.Context, own wfapi.PoolRef, config string) (others, ownShown bool, err error) {
	var pools v1alpha1.WorkerPoolList
	if err := a.Cache.List(ctx, &pools, ctrlclient.MatchingFields{poolwatch.StatusConfigIndex: config},
		ctrlclient.Limit(2), ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return false, false, fmt.Errorf("looking up WorkerPools naming SandboxConfig %q in the cache: %w", config, err)
	}
	for i := range pools.Items {
		if pools.Items[i].Namespace == own.Namespace && pools.Items[i].Name == own.Name {
			ownShown = true
		} else {
			others = true
		}
	}
	return others, ownShown, nil
}

// awaitOwnWrite polls the cache until it no longer shows own naming config,
// or ownWriteWait passes, and says whether it then shows another user.
func (a *Activities) awaitOwnWrite(ctx context.Context, own wfapi.PoolRef, config string) (bool, error) {
	var others bool
	err := wait.PollUntilContextTimeout(ctx, ownWritePoll, ownWriteWait, false, func(ctx context.Context) (bool, error) {
		var ownShown bool
		var err error
		others, ownShown, err = a.cachedUsers(ctx, own, config)
		return others || !ownShown, err
	})
	if err != nil && !wait.Interrupted(err) {
		return false, err
	}
	if err != nil && ctx.Err() != nil {
		return false, fmt.Errorf("waiting for the cache to show WorkerPool %s's write before waking SandboxConfig %q's release: %w", own, config, ctx.Err())
	}
	return others, nil
}

// wakeLog is when this worker last woke each config's release.
type wakeLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// claim says whether config's release may be woken at now (not woken in
// the wakeQuiet before), and if so records the wake-up.
func (l *wakeLog) claim(config string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.last[config]; ok && now.Sub(at) < wakeQuiet {
		return false
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	for name, at := range l.last {
		if now.Sub(at) >= wakeQuiet {
			delete(l.last, name)
		}
	}
	l.last[config] = now
	return true
}

// drop forgets a wake-up that failed, so the retry wakes.
func (l *wakeLog) drop(config string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, config)
}
