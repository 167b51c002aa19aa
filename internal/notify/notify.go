// Package notify tells waiters that something named by a key changed since
// they last looked, without ever holding up whoever reports the change.
// The worker's WorkerPool informer reports each pool event under the
// classes the pool follows the default of (poolwatch.NotifyClasses), and a
// rollout step's wait, woken by its class's, looks at once rather than at
// its next poll.
//
// A waiter asks for Changed(key) before it looks, looks, then waits on the
// channel: it is closed by the first Notify(key) after the Changed call, so
// a change made while the waiter looked is not missed. Notifications
// coalesce: a burst of any length closes the channel once, and a waiter
// learns that something changed, not what or how often. Notify never blocks
// and, when nobody waits for its key, only looks the key up.
package notify

import "sync"

// Notifier is a set of keyed wake-ups. The zero value is ready to use; a nil
// *Notifier never notifies (its Changed channels are nil, which never
// fire), so a waiter built without one falls back to its own timer.
type Notifier struct {
	mu sync.Mutex
	// waiting holds, per key, the channel the next Notify of the key
	// closes: made by the first Changed after the last Notify, so at
	// most one per key, whoever and however many wait on it.
	waiting map[string]chan struct{}
}

// Changed returns a channel closed by the first Notify(key) after this
// call (nil for a nil Notifier).
func (n *Notifier) Changed(key string) <-chan struct{} {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.waiting[key]
	if !ok {
		if n.waiting == nil {
			n.waiting = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		n.waiting[key] = ch
	}
	return ch
}

// Notify wakes every waiter of key: it closes the channel Changed handed
// out since the last Notify of key, if any. It never blocks on a waiter.
func (n *Notifier) Notify(key string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.waiting[key]; ok {
		close(ch)
		delete(n.waiting, key)
	}
}
