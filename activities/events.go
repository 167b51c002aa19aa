package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// ReportingController names this product in the events it records.
const ReportingController = "ate.dev/orchestrator"

// EventInput is one event about a WorkerPool.
type EventInput struct {
	Pool wfapi.PoolRef `json:"pool"`
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type   string `json:"type"`
	Reason string `json:"reason"`
	Action string `json:"action"`
	Note   string `json:"note"`
	// Key identifies the occurrence: the same key always gives the same
	// event name, so a retried creation is a no-op and an event is recorded
	// exactly once.
	Key string `json:"key"`
}

// RecordEvent creates an events.k8s.io/v1 Event regarding a pool. Its name is
// derived from the pool's UID and the key, so a retry after a crash finds it
// already there.
func (a *Activities) RecordEvent(ctx context.Context, in EventInput) error {
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
			Name:      EventName(in.Pool, in.Key),
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
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording %s event %q on WorkerPool %s: %w", in.Reason, ev.Name, in.Pool, err)
	}
	return nil
}

// WarningEvent is the Warning event of a failed resolution. Its key is the
// failure itself, at the pool generation: the same failure reported again by
// a later pass or a retried activity is the same event, recorded once.
// Switches recorded before the pool reconciler use it.
func WarningEvent(pool wfapi.PoolRef, class v1alpha1.SandboxClass, reason, message string, generation int64) EventInput {
	return EventInput{
		Pool: pool, Type: corev1.EventTypeWarning, Reason: reason, Action: "Resolve", Note: message,
		Key: fmt.Sprintf("warning/%s/%s/%s/%d", class, reason, message, generation),
	}
}

// FailureWarning is the Warning of one appearance of a failed resolution: a
// class's Resolved condition False with this reason and message since
// since (its lastTransitionTime). A failure that goes away and comes back is
// a new appearance (a new transition time) and is reported again; the same
// appearance, reported by a switch's roll back, by the pool reconciler, or
// by either after a crash, is the same event, recorded once.
func FailureWarning(pool wfapi.PoolRef, class v1alpha1.SandboxClass, reason, message string, since metav1.Time) EventInput {
	return EventInput{
		Pool: pool, Type: corev1.EventTypeWarning, Reason: reason, Action: "Resolve", Note: message,
		Key: fmt.Sprintf("failure/%s/%s/%s/%s", class, reason, message, since.UTC().Format(time.RFC3339)),
	}
}

// EventName is the deterministic name of the event with this key.
func EventName(pool wfapi.PoolRef, key string) string {
	sum := sha256.Sum256([]byte(pool.UID + "\x00" + key))
	prefix := pool.Name
	if len(prefix) > 200 {
		prefix = prefix[:200]
	}
	return prefix + "." + hex.EncodeToString(sum[:8])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
