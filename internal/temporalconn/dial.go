package temporalconn

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// Dial backoff: doubling from the first delay up to the cap, with jitter so
// that many pods restarted together do not retry in lockstep.
const (
	dialFirstDelay = 500 * time.Millisecond
	dialMaxDelay   = 30 * time.Second
)

// Dial connects to Temporal, retrying with capped exponential
// backoff until it succeeds or ctx is done, and logs each failure with the
// address. A server that is not up yet (it starts with the pod, or is
// being upgraded) is thus waited for rather than crash-looped on. When
// opts has no Logger, the SDK logs through log. log may be nil
// (slog.Default()).
func Dial(ctx context.Context, opts client.Options, log *slog.Logger) (client.Client, error) {
	if log == nil {
		log = slog.Default()
	}
	if opts.Logger == nil {
		opts.Logger = tlog.NewStructuredLogger(log)
	}
	delay := dialFirstDelay
	for attempt := 1; ; attempt++ {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			if attempt > 1 {
				log.Info("connected to Temporal", "address", opts.HostPort, "namespace", opts.Namespace, "attempts", attempt)
			}
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("could not connect to Temporal at %s (namespace %q) in %d attempts: %w; last error: %w",
				opts.HostPort, opts.Namespace, attempt, ctx.Err(), err)
		}
		wait := delay/2 + rand.N(delay/2+1) // jitter in [delay/2, delay]
		log.Warn("cannot connect to Temporal; retrying",
			"address", opts.HostPort, "namespace", opts.Namespace, "attempt", attempt, "retryIn", wait.Round(time.Millisecond), "error", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("could not connect to Temporal at %s (namespace %q) in %d attempts: %w; last error: %w",
				opts.HostPort, opts.Namespace, attempt, ctx.Err(), err)
		case <-time.After(wait):
		}
		delay = min(2*delay, dialMaxDelay)
	}
}
