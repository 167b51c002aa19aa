package starter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestTheReleaseStarterWakesAReleaseOnceItsLastUserIsGone: the starter
// starts a config's release when it first sees the config in deletion,
// users or not; then, of the pool events that follow, only the look that
// finds no user left wakes it, once, not every event that changed a
// pool's configs.
func TestTheReleaseStarterWakesAReleaseOnceItsLastUserIsGone(t *testing.T) {
	type look struct {
		users    int // pools whose status names the config at this look
		wantWake bool
	}
	tests := []struct {
		name     string
		deleting bool
		looks    []look
	}{
		{name: "in deletion with users: started at the mark, woken when the last goes", deleting: true, looks: []look{
			{users: 3, wantWake: true}, {users: 2}, {users: 1}, {users: 0, wantWake: true}, {users: 0}, {users: 0},
		}},
		{name: "in deletion without users: started at the mark, once", deleting: true, looks: []look{
			{users: 0, wantWake: true}, {users: 0},
		}},
		{name: "a user back after the count reached zero: woken again when it goes", deleting: true, looks: []look{
			{users: 1, wantWake: true}, {users: 0, wantWake: true}, {users: 1}, {users: 0, wantWake: true},
		}},
		{name: "not in deletion: never", looks: []look{{users: 1}, {users: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "uid-1",
				Finalizers: []string{v1alpha1.ProtectionFinalizer}}}
			if tt.deleting {
				now := metav1.Now()
				c.DeletionTimestamp = &now
			}
			r := &releaseStarter{scope: wfapi.ScopeOf("test", ""), metrics: newMetrics()}
			for i, l := range tt.looks {
				var objs []ctrlclient.Object
				objs = append(objs, c)
				for p := range l.users {
					objs = append(objs, &v1alpha1.WorkerPool{
						ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + p))},
						Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
							Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"},
						}}},
					})
				}
				r.cache = fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
					WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
						return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
					}).Build()
				temporal := &mocks.Client{}
				if l.wantWake {
					temporal.On("SignalWithStartWorkflow", mock.Anything, wfapi.ScopeOf("test", "").Cluster.ReleaseWorkflowID("old"),
						wfapi.SignalRecheck, nil, mock.Anything, wfapi.ReleaseWorkflow, mock.Anything).
						Return(&mocks.WorkflowRun{}, nil).Once()
				}
				r.temporal = temporal
				_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "old"}})
				require.NoError(t, err, "look %d", i)
				temporal.AssertExpectations(t)
			}
		})
	}
}
