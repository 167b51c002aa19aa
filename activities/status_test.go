package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/wfapi"
)

const gvisor = v1alpha1.SandboxClassGVisor

// apiCalls counts the WorkerPool requests made to the API server.
type apiCalls struct{ Gets, StatusWrites, Conflicts int }

// statusFixture is a pool on "old" and the config "new" in a fake API server, the worker's cache
// of it, and the activities.
type statusFixture struct {
	store ctrlclient.Client
	calls *apiCalls
	cache *cacheStub
	acts  *Activities
	ref   wfapi.PoolRef
}

func newStatusFixture(t *testing.T) *statusFixture {
	t.Helper()
	pool := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool", UID: "uid-1", Generation: 2},
		Spec:       v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}},
		Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"},
		}}},
	}
	// "new", the config the tests' switches move to, and "other" and
	// "stale", protected (Claim and Confirm check them).
	target := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "new", Finalizers: []string{v1alpha1.ProtectionFinalizer}},
		Spec:       v1alpha1.SandboxConfigSpec{SandboxClass: gvisor},
	}
	other, stale := target.DeepCopy(), target.DeepCopy()
	other.Name, stale.Name = "other", "stale"
	store := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(pool, target, other, stale).
		WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
	calls := &apiCalls{}
	live := interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			if _, ok := obj.(*v1alpha1.WorkerPool); ok {
				calls.Gets++
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c ctrlclient.Client, sub string, obj ctrlclient.Object, opts ...ctrlclient.SubResourceUpdateOption) error {
			calls.StatusWrites++
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			if apierrors.IsConflict(err) {
				calls.Conflicts++
			}
			return err
		},
	})
	cache := &cacheStub{store: store}
	return &statusFixture{
		store: store, calls: calls, cache: cache,
		acts: &Activities{Live: live, Cache: cache},
		ref:  wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"},
	}
}

func (f *statusFixture) pool(t *testing.T) *v1alpha1.WorkerPool {
	t.Helper()
	var p v1alpha1.WorkerPool
	require.NoError(t, f.store.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: "pool"}, &p))
	return &p
}

// cacheStub is the worker's cache of WorkerPools: up to date with the API
// server, or frozen at a copy (an informer that lags).
type cacheStub struct {
	store  ctrlclient.Reader
	frozen *v1alpha1.WorkerPool
}

func (c *cacheStub) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	if _, pool := obj.(*v1alpha1.WorkerPool); c.frozen == nil || !pool {
		return c.store.Get(ctx, key, obj, opts...)
	}
	c.frozen.DeepCopyInto(obj.(*v1alpha1.WorkerPool))
	return nil
}

func (c *cacheStub) List(context.Context, ctrlclient.ObjectList, ...ctrlclient.ListOption) error {
	return errors.New("not used")
}

// TestClaimAndConfirmWriteWithoutReading: a switch's claim writes on the
// resourceVersion its pass observed and its confirm on the one the claim
// returned, starting from the worker's cache when it holds the pool at that
// version; otherwise they read the pool first, as they always did. Either
// way the writes are guarded by the version and land as they did.
func TestClaimAndConfirmWriteWithoutReading(t *testing.T) {
	tests := []struct {
		name string
		// observed gives the version the claim is passed, from the pool's.
		observed func(rv string) string
		// before acts after the pass observed the pool, before the claim.
		before func(t *testing.T, f *statusFixture)
		// claimedBefore: the claim ran before it returned its version.
		claimedBefore bool
		wantCalls     apiCalls
		wantGone      bool
	}{
		{
			name:      "the cache holds the observed version",
			observed:  func(rv string) string { return rv },
			wantCalls: apiCalls{StatusWrites: 2},
		},
		{
			name:      "no observed version: the claim reads",
			observed:  func(string) string { return "" },
			wantCalls: apiCalls{Gets: 1, StatusWrites: 2},
		},
		{
			name:          "no version known to either step: both read",
			observed:      func(string) string { return "" },
			claimedBefore: true,
			wantCalls:     apiCalls{Gets: 2, StatusWrites: 2},
		},
		{
			// The cache is ahead of the pass: the claim reads rather than
			// write to conflict; the confirm still writes without.
			name:     "someone wrote the pool since the pass observed it",
			observed: func(rv string) string { return rv },
			before: func(t *testing.T, f *statusFixture) {
				p := f.pool(t)
				p.Status.Replicas = 3
				require.NoError(t, f.store.Status().Update(context.Background(), p))
			},
			wantCalls: apiCalls{Gets: 1, StatusWrites: 2},
		},
		{
			// The cache still holds the observed version: the claim writes,
			// conflicts, reads, writes; the confirm finds the cache behind
			// the claim and starts from the pool as the claim's write
			// returned it, at the version it knows (writtenPools).
			name:     "someone wrote the pool since the pass observed it, and the cache lags",
			observed: func(rv string) string { return rv },
			before: func(t *testing.T, f *statusFixture) {
				f.cache.frozen = f.pool(t)
				p := f.pool(t)
				p.Status.Replicas = 3
				require.NoError(t, f.store.Status().Update(context.Background(), p))
			},
			wantCalls: apiCalls{Gets: 1, StatusWrites: 3, Conflicts: 1},
		},
		{
			name:     "the pool was deleted since the pass observed it, and the cache lags",
			observed: func(rv string) string { return rv },
			before: func(t *testing.T, f *statusFixture) {
				f.cache.frozen = f.pool(t)
				require.NoError(t, f.store.Delete(context.Background(), f.pool(t)))
			},
			wantCalls: apiCalls{StatusWrites: 1},
			wantGone:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newStatusFixture(t)
			observed := tt.observed(f.pool(t).ResourceVersion)
			if tt.before != nil {
				tt.before(t, f)
			}

			claim, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ResourceVersion: observed})
			require.NoError(t, err)
			if tt.wantGone {
				require.Equal(t, PoolGone, claim.Outcome)
				require.Equal(t, tt.wantCalls, *f.calls)
				return
			}
			require.True(t, claim.Wrote)
			require.Equal(t, f.pool(t).ResourceVersion, claim.ResourceVersion, "the claim returns the version it wrote")
			require.Equal(t, "new", f.pool(t).Status.ClassStatus(gvisor).PendingConfigRef.Name)

			claimed := claim.ResourceVersion
			if tt.claimedBefore {
				claimed = ""
			}
			confirmed, err := f.acts.Confirm(ctx, SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2, ResourceVersion: claimed})
			require.NoError(t, err)
			require.True(t, confirmed.Wrote)
			require.Equal(t, f.pool(t).ResourceVersion, confirmed.ResourceVersion)

			require.Equal(t, tt.wantCalls, *f.calls)
			got := f.pool(t)
			st := got.Status.ClassStatus(gvisor)
			require.Equal(t, "new", st.ConfigRef.Name)
			require.Nil(t, st.PendingConfigRef)
			require.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionResolved))
			require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved))
			if tt.before != nil {
				require.Equal(t, int32(3), got.Status.Replicas, "another writer's change is kept")
			}
		})
	}
}

// TestARetriedClaimChangesNothing: a claim retried after its write landed
// (its completion lost) is given the version its pass observed, which is no
// longer the pool's: it reads, finds nothing to write, and returns the
// version the confirm writes on.
func TestARetriedClaimChangesNothing(t *testing.T) {
	ctx := context.Background()
	f := newStatusFixture(t)
	in := ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ResourceVersion: f.pool(t).ResourceVersion}
	first, err := f.acts.Claim(ctx, in)
	require.NoError(t, err)
	require.True(t, first.Wrote)

	again, err := f.acts.Claim(ctx, in)
	require.NoError(t, err)
	require.False(t, again.Wrote)
	require.Equal(t, first.ResourceVersion, again.ResourceVersion)
	require.Equal(t, apiCalls{Gets: 1, StatusWrites: 1}, *f.calls)
}

// TestAStatusWriteOfAPoolGoneIsPoolGone: a pool deleted between the read and
// the write ends the activity as gone, as the retry's read would.
func TestAStatusWriteOfAPoolGoneIsPoolGone(t *testing.T) {
	f := newStatusFixture(t)
	f.acts.Live = interceptor.NewClient(f.store.(ctrlclient.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(context.Context, ctrlclient.Client, string, ctrlclient.Object, ...ctrlclient.SubResourceUpdateOption) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "ate.dev", Resource: "workerpools"}, "pool")
		},
	})
	res, err := f.acts.Claim(context.Background(), ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
	require.NoError(t, err)
	require.Equal(t, PoolGone, res.Outcome)
}
