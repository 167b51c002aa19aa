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
				Reason: "SandboxConfigSwitched", Key: "switch/run-1", Note: "n",
			})
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
}
