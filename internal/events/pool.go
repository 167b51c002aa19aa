package events

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// PoolEvent is one event about a WorkerPool: the input of the RecordEvent
// activity, so its JSON shape is part of the workflows' history.
type PoolEvent struct {
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

// FailureWarning is the Warning of one appearance of a failed resolution: a
// class's Resolved condition False with this reason and message since
// since (its lastTransitionTime). A failure that goes away and comes back,
// or changes and changes back (a False condition's new reason or message is
// a transition too: poolstatus.SetClassCondition), is a new appearance (a
// new transition time) and is reported again; the same appearance, reported
// by a switch's roll back, by the pool reconciler, or by either after a
// crash, is the same event, recorded once.
func FailureWarning(pool wfapi.PoolRef, class v1alpha1.SandboxClass, reason, message string, since metav1.Time) PoolEvent {
	return PoolEvent{
		Pool: pool, Type: corev1.EventTypeWarning, Reason: reason, Action: "Resolve", Note: message,
		Key: fmt.Sprintf("failure/%s/%s/%s/%s", class, reason, message, since.UTC().Format(time.RFC3339)),
	}
}

// Event is the event p records: about the pool's incarnation, named by
// its key.
func (p PoolEvent) Event() Event {
	return Event{Regarding: Pool(p.Pool), Key: p.Key, Type: p.Type, Reason: p.Reason, Action: p.Action, Note: p.Note}
}
