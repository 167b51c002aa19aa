package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

var eventsResource = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}

func poolEvent() Event {
	return PoolEvent{Pool: wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}, Type: corev1.EventTypeNormal,
		Reason: v1alpha1.EventReasonSandboxConfigSwitched, Action: "Switch", Note: "n", Key: "switch/run-1"}.Event()
}

func configEvent() Event {
	return Event{Regarding: Config("new", "uid-c"), Key: "run-1/event/3", Type: corev1.EventTypeWarning,
		Reason: v1alpha1.EventReasonRolloutHalted, Action: "Rollout", Note: "halted"}
}

// TestRecord: an event is created once, where `kubectl describe` finds it,
// under its deterministic name; one that exists already is success and is
// left as it is; a refusal is an error that names the event and its object.
func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		// existing is an event already there (an earlier try's).
		existing *eventsv1.Event
		// refuse is the API server's answer to the create.
		refuse    error
		want      *eventsv1.Event
		wantError string
	}{
		{name: "a pool's event, in the pool's namespace", ev: poolEvent(), want: &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: "ns", Name: "p.321d2615b896b4bc"},
			ReportingController: "ate.dev/orchestrator", ReportingInstance: "worker-0",
			Action: "Switch", Reason: "SandboxConfigSwitched", Note: "n", Type: "Normal",
			Regarding: corev1.ObjectReference{APIVersion: "ate.dev/v1alpha1", Kind: "WorkerPool", Namespace: "ns", Name: "p", UID: "uid-1"},
		}},
		{name: "a config's event, in the default namespace", ev: configEvent(), want: &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: "default", Name: "new.32a19fc50c577fa9"},
			ReportingController: "ate.dev/orchestrator", ReportingInstance: "worker-0",
			Action: "Rollout", Reason: "RolloutHalted", Note: "halted", Type: "Warning",
			Regarding: corev1.ObjectReference{APIVersion: "ate.dev/v1alpha1", Kind: "SandboxConfig", Name: "new", UID: "uid-c"},
		}},
		{name: "recorded already: success, the first kept", ev: poolEvent(),
			existing: &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p.321d2615b896b4bc"}, Note: "the first try's"},
			want:     &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p.321d2615b896b4bc"}, Note: "the first try's"}},
		{name: "refused: the error names the event and the pool", ev: poolEvent(), refuse: apierrors.NewForbidden(eventsResource, "p.321d2615b896b4bc", errors.New("RBAC")),
			wantError: `recording SandboxConfigSwitched event "p.321d2615b896b4bc" on WorkerPool ns/p: `},
		{name: "refused: the error names the event and the config", ev: configEvent(), refuse: apierrors.NewServiceUnavailable("down"),
			wantError: `recording RolloutHalted event "new.32a19fc50c577fa9" on SandboxConfig new: down`},
		{name: "no key: refused without a request", ev: func() Event { ev := poolEvent(); ev.Key = ""; return ev }(),
			wantError: "an event needs the kind and name of its object, a key and a reason"},
		{name: "no reason: refused without a request", ev: func() Event { ev := configEvent(); ev.Reason = ""; return ev }(),
			wantError: "an event needs the kind and name of its object, a key and a reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.existing != nil {
				objects = append(objects, tc.existing)
			}
			cs := fake.NewClientset(objects...)
			if tc.refuse != nil {
				cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.refuse })
			}
			err := Recorder{Client: cs.EventsV1(), Instance: "worker-0"}.Record(context.Background(), tc.ev)
			if tc.wantError != "" {
				require.ErrorContains(t, err, tc.wantError)
				if tc.refuse != nil {
					require.ErrorIs(t, err, tc.refuse, "the API server's error is wrapped")
				}
				return
			}
			require.NoError(t, err)
			list, err := cs.EventsV1().Events(tc.want.Namespace).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, list.Items, 1)
			got := list.Items[0]
			got.TypeMeta, got.ManagedFields, got.ResourceVersion = metav1.TypeMeta{}, nil, "" // the fake's bookkeeping
			if tc.existing == nil {
				require.False(t, got.EventTime.IsZero(), "the event says when")
				got.EventTime = metav1.MicroTime{}
			}
			require.Equal(t, *tc.want, got)
		})
	}
}

// TestRecordTwice: recording the same occurrence again (a retry after a
// crash, the pool keeper after a switch) creates nothing more.
func TestRecordTwice(t *testing.T) {
	cs := fake.NewClientset()
	r := Recorder{Client: cs.EventsV1(), Instance: "worker-0"}
	for range 2 {
		require.NoError(t, r.Record(context.Background(), poolEvent()))
	}
	list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
}

// TestBuildCutsTheNote: a note longer than the API server takes is cut, so
// the event is recorded.
func TestBuildCutsTheNote(t *testing.T) {
	ev := configEvent()
	ev.Note = strings.Repeat("n", 1500)
	require.Equal(t, strings.Repeat("n", 1024), ev.Build("w").Note)
}

// TestNoNamespace: only a namespace being deleted or gone says an event can
// never be recorded, also through Record's wrapping.
func TestNoNamespace(t *testing.T) {
	terminating := apierrors.NewForbidden(eventsResource, "e", nil)
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated"}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"namespace being deleted", terminating, true},
		{"namespace gone", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), true},
		{"forbidden by RBAC", apierrors.NewForbidden(eventsResource, "e", nil), false},
		{"API server unavailable", apierrors.NewServiceUnavailable("down"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, NoNamespace(tc.err))
			if tc.err != nil {
				require.Equal(t, tc.want, NoNamespace(fmt.Errorf("recording: %w", tc.err)), "wrapped")
			}
		})
	}
}
