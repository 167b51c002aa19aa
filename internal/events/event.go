package events

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReportingController names this product in the events it records.
const ReportingController = "ate.dev/orchestrator"

// maxNote is the API server's limit on an event's note: a longer note is
// cut, so that the event is recorded rather than refused.
const maxNote = 1024

// Event is one occurrence to record about an object: what the product's
// callers decide (the object, the key of the occurrence, the reason, the
// words), from which Build makes the events.k8s.io/v1 Event.
type Event struct {
	// Regarding is the object the event is about: Pool or Config.
	Regarding corev1.ObjectReference
	// Key identifies the occurrence for that object: the same key always
	// gives the same name (Name), so a retried creation finds the event
	// there and it is recorded once.
	Key string
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning; Reason is
	// one of the event reasons of api/v1alpha1/names.go.
	Type   string
	Reason string
	Action string
	Note   string
}

// Name is the event's deterministic name (see Name).
func (e Event) Name() string { return Name(e.Regarding, e.Key) }

// Namespace is where the event lives: in the namespace of the object it is
// about, or, for a cluster-scoped object (a SandboxConfig), in the default
// namespace, where `kubectl describe` looks for a cluster-scoped object's
// events.
func (e Event) Namespace() string {
	if e.Regarding.Namespace != "" {
		return e.Regarding.Namespace
	}
	return metav1.NamespaceDefault
}

// Build is the events.k8s.io/v1 Event of e as instance (the process, for
// ReportingInstance) reports it now.
func (e Event) Build(instance string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: e.Name(), Namespace: e.Namespace()},
		EventTime:           metav1.NowMicro(),
		ReportingController: ReportingController,
		ReportingInstance:   instance,
		Action:              e.Action,
		Reason:              e.Reason,
		Note:                truncate(e.Note, maxNote),
		Type:                e.Type,
		Regarding:           e.Regarding,
	}
}

// truncate cuts s to n bytes. It cuts bytes, not runes, as the recorders
// always have: a note's spelling is part of what users and tests read.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
