package servers

import (
	"context"
	"fmt"
	"time"

	"ate.dev/orchestrator/test/localstack/procs"
)

// waitServing probes a launched server every interval until probe succeeds,
// the server process exits (no use waiting: it says so at once), or ctx
// ends (the error then carries the last probe's).
func waitServing(ctx context.Context, proc *procs.Process, interval time.Duration, probe func(context.Context) error) error {
	for {
		if proc.Exited() {
			return fmt.Errorf("the server exited: %w", proc.Err())
		}
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-proc.Done():
		case <-time.After(interval):
		}
	}
}
