package starter

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Backoff of a pool whose switch, or a config whose release, could not be
// started or signalled (Temporal unreachable). Both starters use it.
//
// The cap is what bounds how long the end of a long outage goes unnoticed:
// each item waits at most maxStartBackoff before its next try, so the
// changes made during the outage are started within seconds of its end.
// controller-runtime's default limiter doubles to 1000 s per item (about 17
// minutes), and its overall token bucket (10 per second) would meter a
// backlog of thousands of items; neither is wanted here, since a try is one
// cheap request to Temporal and a refused one costs the server nothing.
const (
	firstStartBackoff = 100 * time.Millisecond
	maxStartBackoff   = 10 * time.Second
)

// startRateLimiter is the per-item limiter of both starters' work queues.
func startRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](firstStartBackoff, maxStartBackoff)
}
