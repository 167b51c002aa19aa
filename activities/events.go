package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
)

// ReportingController names this product in the events it records.
const ReportingController = "ate.dev/orchestrator"

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
	if err := checkCaller(ctx, in.Pool); err != nil {
		return err
	}
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      in.Event().Name(),
			Namespace: in.Pool.Namespace,
		},
		EventTime:           metav1.NowMicro(),
		ReportingController: ReportingController,
		ReportingInstance:   a.Instance,
		Action:              in.Action,
		Reason:              in.Reason,
		Note:                truncate(in.Note, 1024),
		Type:                in.Type,
		Regarding: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(),
			Kind:       "WorkerPool",
			Namespace:  in.Pool.Namespace,
			Name:       in.Pool.Name,
			UID:        types.UID(in.Pool.UID),
		},
	}
	_, err := a.Clientset.EventsV1().Events(in.Pool.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case noNamespace(err):
		// The pool's namespace is being deleted (every create there is
		// refused) or is gone: the pool goes with it, and so would the
		// event. Retrying cannot record it; it would only hold the pool's
		// switch ID for ever. Say so, and let the switch end.
		a.logger(ctx).Warn("the event cannot be recorded: the pool's namespace is being deleted or is gone",
			"pool", in.Pool.String(), "uid", in.Pool.UID, "reason", in.Reason, "event", ev.Name, "error", err.Error())
		return nil
	}
	err = fmt.Errorf("recording %s event %q on WorkerPool %s: %w", in.Reason, ev.Name, in.Pool, err)
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

// noNamespace reports whether an event's create was refused because its
// namespace is being deleted (403 with the NamespaceTerminating cause) or
// does not exist (404: nothing else of an event's create can be missing).
func noNamespace(err error) bool {
	return apierrors.IsNotFound(err) ||
		(apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
