package events

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
)

// Recorder creates the product's events, each once: every recorder of the
// product (the RecordEvent and RecordRolloutEvent activities, a switch
// step's failure report, the release's Warning, the pool keeper) records
// through it.
type Recorder struct {
	Client eventsv1client.EventsGetter
	// Instance names this process in the events it records
	// (reportingInstance): the worker's host name.
	Instance string
}

// Record creates the event ev. An event of its name that exists already is
// this occurrence, recorded by an earlier try, so that is success. An error
// names the event and its object; NoNamespace tells whether it can ever be
// recorded.
func (r Recorder) Record(ctx context.Context, ev Event) error {
	if ev.Regarding.Kind == "" || ev.Regarding.Name == "" || ev.Key == "" || ev.Reason == "" {
		return fmt.Errorf("an event needs the kind and name of its object, a key and a reason, got %+v", ev)
	}
	e := ev.Build(r.Instance)
	_, err := r.Client.Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	object := ev.Regarding.Name
	if ev.Regarding.Namespace != "" {
		object = ev.Regarding.Namespace + "/" + object
	}
	return fmt.Errorf("recording %s event %q on %s %s: %w", ev.Reason, e.Name, ev.Regarding.Kind, object, err)
}

// NoNamespace reports whether err, from Record, says the event's namespace
// is being deleted (403 with the NamespaceTerminating cause: every create
// there is refused) or does not exist (404: nothing else of an event's
// create can be missing). No retry can record the event then; the object
// it is about goes with its namespace, and so would the event.
func NoNamespace(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) ||
		(apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)))
}
