package starter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestStartBackoffIsCapped: however long Temporal refused a pool's start or
// a config's signal, the next try is at most maxStartBackoff away, so the
// changes made during a long outage are started within seconds of its end
// (controller-runtime's default limiter would wait up to 1000 s). Each item
// backs off on its own, and a success starts it over.
func TestStartBackoffIsCapped(t *testing.T) {
	rl := startRateLimiter()
	pool := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}
	config := reconcile.Request{NamespacedName: types.NamespacedName{Name: "c"}}

	tests := []struct {
		failures int
		want     time.Duration
	}{
		{failures: 1, want: 100 * time.Millisecond},
		{failures: 2, want: 200 * time.Millisecond},
		{failures: 7, want: 6400 * time.Millisecond},
		{failures: 8, want: maxStartBackoff},
		// An hour of refusals at the cap, and then some.
		{failures: 400, want: maxStartBackoff},
	}
	done := 0
	for _, tt := range tests {
		var got time.Duration
		for ; done < tt.failures; done++ {
			got = rl.When(pool)
		}
		require.Equal(t, tt.want, got, "delay after %d failures", tt.failures)
	}
	require.Equal(t, firstStartBackoff, rl.When(config), "another item has its own backoff")
	rl.Forget(pool)
	require.Equal(t, firstStartBackoff, rl.When(pool), "a success starts the backoff over")
}
