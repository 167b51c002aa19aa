package starter

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
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

// TestTheReleaseStarterForgetsReleasedConfigs: what the release starter
// remembers of a config (woken) is dropped once the config no longer needs
// a release (its finalizer removed by the release, or the config gone), so
// it stays bounded by the configs in deletion, not by every config ever
// released. The events go through the controller's own predicate, as the
// manager would hand them to Reconcile.
func TestTheReleaseStarterForgetsReleasedConfigs(t *testing.T) {
	const configs = 200
	const otherFinalizer = "example.com/keep"
	tests := []struct {
		name string
		// keep leaves another finalizer on the config, so it stays in
		// deletion after its release removed the protection.
		keep bool
		// missedUpdate: the informer saw only the deletion (a relist after
		// a lost watch), not the update that removed the finalizer.
		missedUpdate bool
	}{
		{name: "released, then deleted"},
		{name: "released, another finalizer keeps it", keep: true},
		{name: "only the deletion seen", missedUpdate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			now := metav1.Now()
			objs := make([]ctrlclient.Object, 0, configs)
			for i := range configs {
				c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("c%03d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)), DeletionTimestamp: &now,
					Finalizers: []string{v1alpha1.ProtectionFinalizer}}}
				if tt.keep {
					c.Finalizers = append(c.Finalizers, otherFinalizer)
				}
				objs = append(objs, c)
			}
			cache := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
				WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
					return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
				}).Build()
			temporal := &mocks.Client{}
			temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything,
				mock.Anything, mock.Anything, mock.Anything).Return(&mocks.WorkflowRun{}, nil)
			r := &releaseStarter{cache: cache, temporal: temporal, scope: wfapi.ScopeOf("test", ""), metrics: newMetrics()}
			reconcileIf := func(pass bool, name string) {
				t.Helper()
				if !pass {
					return
				}
				_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
				require.NoError(t, err, "config %s", name)
			}
			for i := range configs {
				name := fmt.Sprintf("c%03d", i)
				var c v1alpha1.SandboxConfig
				require.NoError(t, cache.Get(ctx, types.NamespacedName{Name: name}, &c))
				reconcileIf(releaseConfigEvents.Create(event.CreateEvent{Object: &c}), name)
				require.Contains(t, r.woken, name, "the release was started")

				// The release removes the protection finalizer; without
				// another, the API server then deletes the config.
				released := c.DeepCopy()
				released.Finalizers = slices.DeleteFunc(released.Finalizers, func(f string) bool { return f == v1alpha1.ProtectionFinalizer })
				require.NoError(t, cache.Update(ctx, released))
				if !tt.missedUpdate {
					reconcileIf(releaseConfigEvents.Update(event.UpdateEvent{ObjectOld: &c, ObjectNew: released}), name)
				}
				if !tt.keep {
					reconcileIf(releaseConfigEvents.Delete(event.DeleteEvent{Object: released}), name)
				}
				require.LessOrEqual(t, len(r.woken), 1, "after %d released configs", i+1)
			}
			require.Empty(t, r.woken, "released configs still remembered")
		})
	}
}
