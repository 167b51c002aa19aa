package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"ate.dev/orchestrator/internal/events"
)

// recorder is how the activities record events: the product's one
// recorder, as this worker.
func (a *Activities) recorder() events.Recorder {
	return events.Recorder{Client: a.Clientset.EventsV1(), Instance: a.Instance}
}

// RecordEvent creates an events.k8s.io/v1 Event regarding a pool. Its name is
// derived from the pool's UID and the key, so a retry after a crash finds it
// already there.
func (a *Activities) RecordEvent(ctx context.Context, in events.PoolEvent) error {
	if err := validatePool(in.Pool); err != nil {
		return err
	}
	if in.Pool.UID == "" || in.Key == "" || in.Reason == "" {
		return invalidInput("an event needs the pool's UID, a key and a reason, got %+v", in)
	}
	// Only the pool's own workflows report on it: an event another
	// workflow asks for (any worker in the Temporal namespace can schedule
	// this) could claim a move that never happened.
	if err := checkCaller(ctx, switchOf(in.Pool)); err != nil {
		return err
	}
	ev := in.Event()
	err := a.recorder().Record(ctx, ev)
	switch {
	case err == nil:
		return nil
	case events.NoNamespace(err):
		// The pool's namespace is being deleted (every create there is
		// refused) or is gone: the pool goes with it, and so would the
		// event. Retrying cannot record it; it would only hold the pool's
		// switch ID for ever. Say so, and let the switch end.
		a.logger(ctx).Warn("the event cannot be recorded: the pool's namespace is being deleted or is gone",
			"pool", in.Pool.String(), "uid", in.Pool.UID, "reason", in.Reason, "event", ev.Name(), "error", err.Error())
		return nil
	}
	if activity.IsActivity(ctx) {
		// The switch's step itself (not a step's failure report, which
		// logs its own): the SDK logs no failed attempt of a local
		// activity, and this step reports no condition, so this line is
		// what says why it retries.
		if info := activity.GetInfo(ctx); info.IsLocalActivity && info.ActivityType.Name == "RecordEvent" {
			a.logger(ctx).Warn("Local activity error.", "step", "RecordEvent", "pool", in.Pool.String(), "Attempt", info.Attempt, "Error", err.Error())
		}
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
