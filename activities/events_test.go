package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestRecordEventWithNoNamespace: an event whose namespace is being deleted
// or is gone cannot be recorded, and RecordEvent ends instead of failing for
// ever; any other refusal is an error, retried. (test/e2e's
// TestASwitchWhoseEventHasNoNamespaceEnds runs it against an API server.)
func TestRecordEventWithNoNamespace(t *testing.T) {
	resource := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	terminating := apierrors.NewForbidden(resource, "e", nil)
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated"}}
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "recorded"},
		{name: "recorded already", err: apierrors.NewAlreadyExists(resource, "e")},
		{name: "namespace being deleted", err: terminating},
		{name: "namespace gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")},
		{name: "forbidden by RBAC: retried", err: apierrors.NewForbidden(resource, "e", nil), wantErr: true},
		{name: "API server unavailable: retried", err: apierrors.NewServiceUnavailable("down"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				return tt.err != nil, nil, tt.err
			})
			a := &Activities{Clientset: cs}
			err := a.RecordEvent(context.Background(), events.PoolEvent{
				Pool: wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"}, Type: corev1.EventTypeNormal,
				Reason: v1alpha1.EventReasonSandboxConfigSwitched, Key: "switch/run-1", Note: "n",
			})
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestActivitiesRecordTheReleasedEvents: each recording activity creates
// the event users and tests know, under its released name (a retry finds
// it there), through the product's one recorder.
func TestActivitiesRecordTheReleasedEvents(t *testing.T) {
	pool := wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}
	tests := []struct {
		name          string
		record        func(a *Activities) error
		namespace     string
		wantName      string
		wantAction    string
		wantRegarding corev1.ObjectReference
	}{
		{name: "RecordEvent", namespace: "ns", wantName: "p.321d2615b896b4bc", wantAction: "Switch",
			record: func(a *Activities) error {
				return a.RecordEvent(context.Background(), events.PoolEvent{Pool: pool, Type: corev1.EventTypeNormal,
					Reason: v1alpha1.EventReasonSandboxConfigSwitched, Action: "Switch", Key: "switch/run-1", Note: "n"})
			},
			wantRegarding: corev1.ObjectReference{APIVersion: "ate.dev/v1alpha1", Kind: "WorkerPool", Namespace: "ns", Name: "p", UID: "uid-1"}},
		{name: "RecordRolloutEvent", namespace: metav1.NamespaceDefault, wantName: "new.32a19fc50c577fa9", wantAction: "Rollout",
			record: func(a *Activities) error {
				return a.RecordRolloutEvent(context.Background(), RolloutEventInput{Config: "new", UID: "uid-c", Key: "run-1/event/3",
					Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonRolloutHalted, Note: "n"})
			},
			wantRegarding: corev1.ObjectReference{APIVersion: "ate.dev/v1alpha1", Kind: "SandboxConfig", Name: "new", UID: "uid-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			a := &Activities{Clientset: cs, Instance: "worker-0"}
			for range 2 { // a retry records nothing more
				require.NoError(t, tt.record(a))
			}
			list, err := cs.EventsV1().Events(tt.namespace).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, list.Items, 1)
			ev := list.Items[0]
			require.Equal(t, tt.wantName, ev.Name)
			require.Equal(t, tt.wantAction, ev.Action)
			require.Equal(t, tt.wantRegarding, ev.Regarding)
			require.Equal(t, "ate.dev/orchestrator", ev.ReportingController)
			require.Equal(t, "worker-0", ev.ReportingInstance)
		})
	}
}
