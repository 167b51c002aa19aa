package notify

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestChanged: a channel is closed by a Notify of its key made after it was
// handed out, and by nothing else; a burst closes it once, and the next
// Changed is a new wait.
func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []string // Notify calls before and after Changed("a")
		woken         bool
	}{
		{name: "nothing notified"},
		{name: "a notify of the key after Changed", after: []string{"a"}, woken: true},
		{name: "a burst of the key after Changed", after: []string{"a", "a", "b", "a", "a"}, woken: true},
		{name: "another key only", after: []string{"b", "microvm"}},
		{name: "the key before Changed only", before: []string{"a", "a"}},
		{name: "the key before and after Changed", before: []string{"a"}, after: []string{"a"}, woken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n Notifier
			for _, k := range tc.before {
				n.Notify(k)
			}
			ch := n.Changed("a")
			require.Equal(t, ch, n.Changed("a"), "one channel per key between two notifies")
			for _, k := range tc.after {
				n.Notify(k)
			}
			require.Equal(t, tc.woken, closed(ch))
			if tc.woken {
				next := n.Changed("a")
				require.False(t, closed(next), "a burst is one wake-up: the next wait waits for the next change")
				n.Notify("a")
				require.True(t, closed(next))
			}
		})
	}
}

// TestNotifyNeverBlocks: with nobody waiting, or a waiter that never reads
// its channel, Notify returns at once, and with nobody waiting it does not
// allocate: the informer that calls it for every pool event of the fleet
// is never held up.
func TestNotifyNeverBlocks(t *testing.T) {
	var n Notifier
	require.Zero(t, testing.AllocsPerRun(1000, func() { n.Notify("gvisor") }), "nobody waits: a look-up, nothing made")

	_ = n.Changed("gvisor") // a waiter that never reads it
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100_000 {
			n.Notify("gvisor")
			n.Notify("microvm")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a deadline, not synchronisation
		t.Fatal("Notify blocked")
	}
}

// TestAWaiterIsWokenByANotifyAfterItRegistered: a goroutine that registered
// and then waits is woken by another goroutine's Notify; every waiter of the
// key is, not one of them.
func TestAWaiterIsWokenByANotifyAfterItRegistered(t *testing.T) {
	var n Notifier
	const waiters = 8
	var registered, woken sync.WaitGroup
	registered.Add(waiters)
	woken.Add(waiters)
	for range waiters {
		go func() {
			ch := n.Changed("gvisor")
			registered.Done()
			<-ch
			woken.Done()
		}()
	}
	registered.Wait()
	n.Notify("microvm")
	n.Notify("gvisor")
	done := make(chan struct{})
	go func() { woken.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiters were not woken by the Notify after they registered")
	}
}

// TestNotifyRaces: notifies and waits of several goroutines at once (run
// with -race); a wait registered before a Notify always ends.
func TestNotifyRaces(t *testing.T) {
	var n Notifier
	var wg sync.WaitGroup
	for i := range 4 {
		key := []string{"gvisor", "microvm"}[i%2]
		wg.Go(func() {
			for range 1000 {
				ch := n.Changed(key)
				n.Notify(key)
				<-ch
			}
		})
		wg.Go(func() {
			for range 1000 {
				n.Notify(key)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a wait registered before a Notify did not end")
	}
}

// TestNilNotifier: a nil Notifier (activities built without one) never
// wakes anyone: its channel is nil, which a select never picks.
func TestNilNotifier(t *testing.T) {
	var n *Notifier
	require.Nil(t, n.Changed("gvisor"))
	n.Notify("gvisor")
}
