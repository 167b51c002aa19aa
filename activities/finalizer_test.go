package activities

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

func sandboxConfig(name string, class v1alpha1.SandboxClass, protected, deleting bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SandboxConfigSpec{SandboxClass: class}}
	if protected {
		c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
	}
	if deleting {
		now := metav1.Now()
		c.DeletionTimestamp = &now
		c.Finalizers = append(c.Finalizers, "example.com/hold")
	}
	return c
}

// finalizerFixture is a fake API server holding configs whose first
// `conflicts` patches are refused with a Conflict, as when someone wrote the
// config between the read and the patch.
func finalizerFixture(t *testing.T, conflicts int, objs ...ctrlclient.Object) (*Activities, ctrlclient.Client, *int) {
	t.Helper()
	store := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).Build()
	patches := 0
	live := interceptor.NewClient(store, interceptor.Funcs{
		Patch: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, patch ctrlclient.Patch, opts ...ctrlclient.PatchOption) error {
			patches++
			if patches <= conflicts {
				return apierrors.NewConflict(schema.GroupResource{Group: "ate.dev", Resource: "sandboxconfigs"}, obj.GetName(), nil)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return &Activities{Live: live}, store, &patches
}

// Protect (upstream's protection cases): a config already protected is left
// as is; one in deletion, missing, or of another class is refused without a
// patch; a conflict reads again and patches the fresh copy.
func TestProtect(t *testing.T) {
	tests := []struct {
		name        string
		config      *v1alpha1.SandboxConfig
		conflicts   int
		wantOK      bool
		wantReason  string
		wantPatches int
	}{
		{name: "not yet protected: one patch", config: sandboxConfig("c", gvisor, false, false), wantOK: true, wantReason: v1alpha1.ReasonResolved, wantPatches: 1},
		{name: "already protected: no patch", config: sandboxConfig("c", gvisor, true, false), wantOK: true, wantReason: v1alpha1.ReasonResolved},
		{name: "in deletion: refused, no patch", config: sandboxConfig("c", gvisor, true, true), wantReason: v1alpha1.ReasonSandboxConfigDeleting},
		{name: "of another class: refused, no patch", config: sandboxConfig("c", v1alpha1.SandboxClassMicroVM, false, false), wantReason: v1alpha1.ReasonSandboxClassMismatch},
		{name: "missing: refused", wantReason: v1alpha1.ReasonSandboxConfigNotFound},
		{name: "a conflict: read again, then patched", config: sandboxConfig("c", gvisor, false, false), conflicts: 2, wantOK: true, wantReason: v1alpha1.ReasonResolved, wantPatches: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []ctrlclient.Object
			if tt.config != nil {
				objs = append(objs, tt.config)
			}
			a, store, patches := finalizerFixture(t, tt.conflicts, objs...)
			check, err := a.Protect(context.Background(), ProtectInput{Config: "c", Class: gvisor})
			require.NoError(t, err)
			require.Equal(t, tt.wantOK, check.OK, check.Message)
			require.Equal(t, tt.wantReason, check.Reason)
			require.Equal(t, tt.wantPatches, *patches)
			if tt.wantOK {
				var got v1alpha1.SandboxConfig
				require.NoError(t, store.Get(context.Background(), ctrlclient.ObjectKey{Name: "c"}, &got))
				require.Equal(t, []string{v1alpha1.ProtectionFinalizer}, got.Finalizers)
			}
		})
	}
}

// Unprotect (upstream's release cases): only a config in deletion that
// carries the finalizer loses it, and only it, by a patch on the version
// read; a conflict is reported for the workflow to look again. It acts only
// on the incarnation the release looked at (UID, resourceVersion), and
// refuses, whoever asked, while a pool's status names the config.
func TestUnprotect(t *testing.T) {
	withUID := func(c *v1alpha1.SandboxConfig, uid string) *v1alpha1.SandboxConfig {
		c.UID = types.UID(uid)
		return c
	}
	user := func(ref, pending string) *v1alpha1.WorkerPool {
		st := v1alpha1.WorkerPoolSandboxClassStatus{Name: gvisor}
		if ref != "" {
			st.ConfigRef = &v1alpha1.SandboxConfigReference{Name: ref}
		}
		if pending != "" {
			st.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: pending}
		}
		return &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "user"},
			Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{st}}}
	}
	tests := []struct {
		name           string
		config         *v1alpha1.SandboxConfig
		pool           *v1alpha1.WorkerPool
		in             UnprotectInput
		conflicts      int
		want           string
		wantUsers      int
		wantFinalizers []string
	}{
		{name: "in deletion and protected: removed, other finalizers kept", config: sandboxConfig("c", gvisor, true, true),
			want: ReleaseRemoved, wantFinalizers: []string{"example.com/hold"}},
		{name: "not in deletion: not needed", config: sandboxConfig("c", gvisor, true, false),
			want: ReleaseNotNeeded, wantFinalizers: []string{v1alpha1.ProtectionFinalizer}},
		{name: "in deletion without the finalizer: not needed", config: sandboxConfig("c", gvisor, false, true),
			want: ReleaseNotNeeded, wantFinalizers: []string{"example.com/hold"}},
		{name: "gone", want: ReleaseGone},
		{name: "a conflict: reported, nothing removed", config: sandboxConfig("c", gvisor, true, true), conflicts: 1,
			want: ReleaseConflict, wantFinalizers: []string{v1alpha1.ProtectionFinalizer, "example.com/hold"}},
		{name: "the incarnation looked at: removed", config: withUID(sandboxConfig("c", gvisor, true, true), "u1"),
			in: UnprotectInput{UID: "u1"}, want: ReleaseRemoved, wantFinalizers: []string{"example.com/hold"}},
		{name: "another incarnation under the name: gone, nothing removed", config: withUID(sandboxConfig("c", gvisor, true, true), "u2"),
			in: UnprotectInput{UID: "u1"}, want: ReleaseGone, wantFinalizers: []string{v1alpha1.ProtectionFinalizer, "example.com/hold"}},
		{name: "changed since the look: a conflict, nothing removed", config: sandboxConfig("c", gvisor, true, true),
			in: UnprotectInput{ResourceVersion: "1"}, want: ReleaseConflict, wantFinalizers: []string{v1alpha1.ProtectionFinalizer, "example.com/hold"}},
		{name: "a pool's configRef names it: in use, nothing removed", config: sandboxConfig("c", gvisor, true, true), pool: user("c", ""),
			want: ReleaseInUse, wantUsers: 1, wantFinalizers: []string{v1alpha1.ProtectionFinalizer, "example.com/hold"}},
		{name: "a pool's claim names it: in use, nothing removed", config: sandboxConfig("c", gvisor, true, true), pool: user("other", "c"),
			want: ReleaseInUse, wantUsers: 1, wantFinalizers: []string{v1alpha1.ProtectionFinalizer, "example.com/hold"}},
		{name: "a pool on another config: removed", config: sandboxConfig("c", gvisor, true, true), pool: user("other", ""),
			want: ReleaseRemoved, wantFinalizers: []string{"example.com/hold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []ctrlclient.Object
			if tt.config != nil {
				objs = append(objs, tt.config)
			}
			if tt.pool != nil {
				objs = append(objs, tt.pool)
			}
			a, store, _ := finalizerFixture(t, tt.conflicts, objs...)
			in := tt.in
			in.Config = "c"
			got, err := a.Unprotect(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Result)
			require.Equal(t, tt.wantUsers, got.Users.Count)
			if tt.config == nil {
				return
			}
			var c v1alpha1.SandboxConfig
			require.NoError(t, store.Get(context.Background(), ctrlclient.ObjectKey{Name: "c"}, &c))
			require.Equal(t, tt.wantFinalizers, c.Finalizers)
		})
	}
}

// A users result counts every user and names at most UserSampleSize of
// them, the smallest keys.
func TestUsersKeepsASample(t *testing.T) {
	var u Users
	for i := 30; i > 0; i-- {
		u.add([]string{fmt.Sprintf("ns/p%02d", i)})
	}
	require.Equal(t, 30, u.Count)
	require.Len(t, u.Sample, UserSampleSize)
	require.Equal(t, "ns/p01", u.Sample[0])
	require.Equal(t, "ns/p10", u.Sample[UserSampleSize-1])
}

// The release's first look is the worker's cache; a cache that misses a
// pool (not synced yet, or behind) says nothing, and Unprotect's live list,
// which bypasses every cache, finds it: the config is kept.
func TestTheLiveListFindsAUserTheCacheMissed(t *testing.T) {
	pool := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"},
		Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: gvisor, PendingConfigRef: &v1alpha1.SandboxConfigReference{Name: "c"},
		}}},
	}
	live := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(pool, sandboxConfig("c", gvisor, true, true)).Build()
	// The cache has not seen the pool yet.
	cache := fake.NewClientBuilder().WithScheme(kube.Scheme).
		WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
			return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
		}).Build()
	a := &Activities{Live: live, Cache: cache}
	cached, err := a.CachedUsers(context.Background(), "c")
	require.NoError(t, err)
	require.Zero(t, cached.Count, "the cache missed it")
	res, err := a.Unprotect(context.Background(), UnprotectInput{Config: "c"})
	require.NoError(t, err)
	require.Equal(t, UnprotectResult{Result: ReleaseInUse, Users: Users{Count: 1, Sample: []string{wfapi.PoolKey("ns", "late")}}}, res,
		"the live list finds it: nothing removed, the release waits")
}
