package poolkeeper

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/kube"
)

const gvisor = v1alpha1.SandboxClassGVisor

type recorder struct{ keys []string }

func (r *recorder) Record(_ context.Context, ev events.Event) error {
	r.keys = append(r.keys, ev.Reason+": "+ev.Note)
	return nil
}

func config(name string, classDefault bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SandboxConfigSpec{SandboxClass: gvisor}}
	if classDefault {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, v1alpha1.ClassDefaultAnnotation, "true")
	}
	return c
}

func pool(current, pending string) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1", Generation: 2},
		Spec: v1alpha1.WorkerPoolSpec{Replicas: ptr(int32(1)), WorkerImage: "registry.example/worker:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}},
	}
	st := v1alpha1.WorkerPoolSandboxClassStatus{Name: gvisor}
	if current != "" {
		st.ConfigRef = &v1alpha1.SandboxConfigReference{Name: current}
	}
	if pending != "" {
		st.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: pending}
	}
	p.Status.SandboxClasses = []v1alpha1.WorkerPoolSandboxClassStatus{st}
	return p
}

// reconcileOnce runs one look over objs.
func reconcileOnce(t *testing.T, objs ...ctrlclient.Object) (*v1alpha1.WorkerPool, *recorder) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
	rec := &recorder{}
	r := &Reconciler{Client: c, Live: c, Deployments: k8sfake.NewClientset().AppsV1(), Events: rec}
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
	require.NoError(t, err)
	var got v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, &got))
	return &got, rec
}

func TestReconcilerLeavesMovesToSwitches(t *testing.T) {
	tests := []struct {
		name       string
		pool       *v1alpha1.WorkerPool
		configs    []ctrlclient.Object
		wantRef    string
		wantReason string // "" when the class's condition is left alone
		wantEvents []string
		// wantObserved is status.observedGeneration: not raised to a
		// generation whose move is not made yet.
		wantObserved int64
	}{
		{
			name:    "a class that must move is its switch's: nothing written for it",
			pool:    pool("", ""),
			configs: []ctrlclient.Object{config("def", true)},
		},
		{
			name:    "a class holding a claim is its switch's",
			pool:    pool("def", "other"),
			configs: []ctrlclient.Object{config("def", true), config("other", false)},
			wantRef: "def",
		},
		{
			name:         "a class on its config",
			pool:         pool("def", ""),
			configs:      []ctrlclient.Object{config("def", true)},
			wantRef:      "def",
			wantReason:   v1alpha1.ReasonResolved,
			wantObserved: 2,
		},
		{
			name:         "a failure that keeps the config: condition and one Warning",
			pool:         pool("old", ""),
			configs:      []ctrlclient.Object{config("old", false)},
			wantRef:      "old",
			wantReason:   v1alpha1.ReasonDefaultConfigNotFound,
			wantEvents:   []string{`DefaultConfigNotFound: no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "old"`},
			wantObserved: 2,
		},
		{
			name:         "a config that may not be kept is dropped",
			pool:         pool("gone", ""),
			wantReason:   v1alpha1.ReasonDefaultConfigNotFound,
			wantEvents:   []string{`DefaultConfigNotFound: no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`},
			wantObserved: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rec := reconcileOnce(t, append(tt.configs, tt.pool)...)
			st := got.Status.ClassStatus(gvisor)
			ref := ""
			if st.ConfigRef != nil {
				ref = st.ConfigRef.Name
			}
			require.Equal(t, tt.wantRef, ref)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
			if tt.wantReason == "" {
				require.Nil(t, c)
			} else {
				require.Equal(t, tt.wantReason, c.Reason)
				require.Equal(t, int64(2), c.ObservedGeneration)
			}
			require.Equal(t, tt.wantEvents, rec.keys)
			require.Equal(t, tt.wantObserved, got.Status.ObservedGeneration)
		})
	}
}

// lagging is a cache behind the API server: it does not have the configs
// named in hidden yet, and has the configs in older as they were.
type lagging struct {
	ctrlclient.Client
	hidden map[string]bool
	older  map[string]*v1alpha1.SandboxConfig
}

func (l lagging) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	if c, ok := obj.(*v1alpha1.SandboxConfig); ok {
		if l.hidden[key.Name] {
			return apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("sandboxconfigs").GroupResource(), key.Name)
		}
		if o := l.older[key.Name]; o != nil {
			o.DeepCopyInto(c)
			return nil
		}
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

func (l lagging) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if configs, ok := list.(*v1alpha1.SandboxConfigList); ok {
		configs.Items = slices.DeleteFunc(configs.Items, func(c v1alpha1.SandboxConfig) bool { return l.hidden[c.Name] })
		for i := range configs.Items {
			if o := l.older[configs.Items[i].Name]; o != nil {
				configs.Items[i] = *o.DeepCopy()
			}
		}
	}
	return nil
}

// TestReconcilerTrustsADeletionTheStatusHasSeen: a switch read a config
// live in deletion and wrote so in the pool's status (Resolved False,
// SandboxConfigDeleting), and the pool's event reached the keeper before
// the config's: its cache still holds the config as it was before the
// deletion. The keeper reads it live and leaves the failure as written (the
// same transition, so its Warning stays the one recorded), instead of
// marking the class Resolved until the config's event takes it back with a
// second Warning. A config deleted and created again since (not in deletion
// live) resolves.
func TestReconcilerTrustsADeletionTheStatusHasSeen(t *testing.T) {
	seen := metav1.NewTime(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC))
	deleting := func(name string, classDefault bool) *v1alpha1.SandboxConfig {
		c := config(name, classDefault)
		c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
		c.DeletionTimestamp = &seen
		return c
	}
	pinnedMsg := `SandboxConfig "old" is being deleted; keeping "old"`
	defaultMsg := `SandboxConfig "old" is being deleted and no other SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "old"`
	tests := []struct {
		name       string
		pinned     bool
		live       *v1alpha1.SandboxConfig
		cached     *v1alpha1.SandboxConfig
		msg        string
		wantReason string
	}{
		{"pinned, the cache behind", true, deleting("old", false), config("old", false), pinnedMsg, v1alpha1.ReasonSandboxConfigDeleting},
		{"the class default, the cache behind", false, deleting("old", true), config("old", true), defaultMsg, v1alpha1.ReasonSandboxConfigDeleting},
		{"pinned, created again since", true, config("old", false), config("old", false), pinnedMsg, v1alpha1.ReasonResolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pool("old", "")
			if tt.pinned {
				p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: "old"}
			}
			p.Status.SandboxClasses[0].Conditions = []metav1.Condition{{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: tt.msg, LastTransitionTime: seen, ObservedGeneration: p.Generation}}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(tt.live, p).
				WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
			rec := &recorder{}
			r := &Reconciler{Client: lagging{Client: c, older: map[string]*v1alpha1.SandboxConfig{"old": tt.cached}}, Live: c,
				Deployments: k8sfake.NewClientset().AppsV1(), Events: rec}
			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
			require.NoError(t, err)
			var got v1alpha1.WorkerPool
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, &got))
			cond := meta.FindStatusCondition(got.Status.ClassStatus(gvisor).Conditions, v1alpha1.ConditionResolved)
			require.NotNil(t, cond)
			require.Equal(t, tt.wantReason, cond.Reason, cond.Message)
			if tt.wantReason != v1alpha1.ReasonResolved {
				require.Equal(t, tt.msg, cond.Message)
				require.Equal(t, seen.UTC(), cond.LastTransitionTime.UTC(), "the same appearance of the failure")
				require.Equal(t, []string{tt.wantReason + ": " + tt.msg}, rec.keys, "its one Warning")
			}
		})
	}
}

// TestReconcilerDropsAConfigOnlyOnALiveRead: the keeper's config cache
// lags (it has not seen a config the API server has), and the pool's
// config is not in it: the keeper confirms with a live read before it
// drops the config name, and keeps it. A config the live read does not
// find either is dropped.
func TestReconcilerDropsAConfigOnlyOnALiveRead(t *testing.T) {
	tests := []struct {
		name       string
		live       []ctrlclient.Object
		wantRef    string
		wantReason string
		wantMsg    string
	}{
		{name: "the cache lags: kept", live: []ctrlclient.Object{config("fresh", false)}, wantRef: "fresh",
			wantReason: v1alpha1.ReasonDefaultConfigNotFound,
			wantMsg:    `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "fresh"`},
		{name: "the cache lags a class default: resolved", live: []ctrlclient.Object{config("fresh", true)}, wantRef: "fresh",
			wantReason: v1alpha1.ReasonResolved, wantMsg: `resolved to SandboxConfig "fresh"`},
		{name: "gone live too: dropped", wantReason: v1alpha1.ReasonDefaultConfigNotFound,
			wantMsg: `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(append(tt.live, pool("fresh", ""))...).
				WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
			r := &Reconciler{Client: lagging{Client: c, hidden: map[string]bool{"fresh": true}}, Live: c,
				Deployments: k8sfake.NewClientset().AppsV1(), Events: &recorder{}}
			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
			require.NoError(t, err)
			var got v1alpha1.WorkerPool
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, &got))
			st := got.Status.ClassStatus(gvisor)
			require.Equal(t, tt.wantRef, st.ConfigRef.NameOf())
			cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
			require.NotNil(t, cond)
			require.Equal(t, tt.wantReason, cond.Reason)
			require.Equal(t, tt.wantMsg, cond.Message)
		})
	}
}

func TestReconcilerLeavesAPoolInDeletionAlone(t *testing.T) {
	p := pool("old", "")
	now := metav1.Now()
	p.DeletionTimestamp, p.Finalizers = &now, []string{"example.com/hold"}
	got, rec := reconcileOnce(t, p)
	require.Empty(t, got.Status.SandboxClasses[0].Conditions)
	require.Zero(t, got.Status.ObservedGeneration)
	require.Empty(t, rec.keys)
}

func TestControlledByEarlierPool(t *testing.T) {
	p := pool("", "")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	ctl := true
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ate.dev/v1alpha1", Kind: "WorkerPool", Name: "p", UID: "uid-0", Controller: &ctl}}
	require.True(t, controlledByEarlierPool(d, p))
	d.OwnerReferences[0].Kind = "ReplicaSet"
	require.False(t, controlledByEarlierPool(d, p), "someone else's")
	d.OwnerReferences = nil
	require.False(t, controlledByEarlierPool(d, p), "nobody's")
}

func ptr[T any](v T) *T { return &v }

// TestReconcilerConfirmsAMissingPinLive: a new pool pins a config its
// cache has not seen yet (created just before the pool). The keeper reads
// it live before it calls the class SandboxConfigNotFound: found, the class
// is left to its switch, with no failure condition and no Warning; gone
// live too, the failure is written and reported.
// reconcileLagging runs one look at pool ns/p over objs with a cache that
// has not seen the config named hidden (the live reader has), and returns
// the gvisor class's Resolved condition (nil if none) and the events.
func reconcileLagging(t *testing.T, hidden string, objs ...ctrlclient.Object) (*metav1.Condition, *recorder) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
	rec := &recorder{}
	r := &Reconciler{Client: lagging{Client: c, hidden: map[string]bool{hidden: true}}, Live: c,
		Deployments: k8sfake.NewClientset().AppsV1(), Events: rec}
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
	require.NoError(t, err)
	var got v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, &got))
	if st := got.Status.ClassStatus(gvisor); st != nil {
		return meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved), rec
	}
	return nil, rec
}

func TestReconcilerConfirmsAMissingPinLive(t *testing.T) {
	tests := []struct {
		name        string
		live        []ctrlclient.Object
		wantFailure bool
	}{
		{name: "the cache lags: left to its switch", live: []ctrlclient.Object{config("pinned", false)}},
		{name: "missing live too: not found", wantFailure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pool("", "")
			p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: "pinned"}
			cond, rec := reconcileLagging(t, "pinned", append(tt.live, p)...)
			if !tt.wantFailure {
				require.Nil(t, cond, "a class its switch is to move has no condition from the keeper")
				require.Empty(t, rec.keys, "no Warning for a config the API server has")
				return
			}
			require.NotNil(t, cond)
			require.Equal(t, v1alpha1.ReasonSandboxConfigNotFound, cond.Reason)
			require.Equal(t, []string{`SandboxConfigNotFound: SandboxConfig "pinned" not found`}, rec.keys)
		})
	}
}

// TestReconcilerLeavesAPoolInATerminatingNamespace: the namespace
// controller deleted the pool's Deployment before the pool, and the API
// server refuses to create one in the terminating namespace. That is no
// failure of the pool's: no DeploymentApplied False, no Warning, no retry.
func TestReconcilerLeavesAPoolInATerminatingNamespace(t *testing.T) {
	p := pool("cfg", "")
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(config("cfg", true), p).
		WithStatusSubresource(&v1alpha1.WorkerPool{}).Build()
	cs := k8sfake.NewClientset()
	cs.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(appsv1.Resource("deployments"), "p", errors.New("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace"}}
		return true, nil, err
	})
	rec := &recorder{}
	r := &Reconciler{Client: c, Live: c, Deployments: cs.AppsV1(), Events: rec}
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
	require.NoError(t, err, "nothing to retry")
	var got v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, &got))
	require.Nil(t, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDeploymentApplied))
	require.Empty(t, rec.keys)
}

// TestReconcilerConfirmsAMissingDefaultLive: a new unpinned pool whose
// class default the keeper's cache has not seen yet (created just before
// the pool) must not read as DefaultConfigNotFound with a Warning: a live
// list settles it. With no default live either, the failure stands.
func TestReconcilerConfirmsAMissingDefaultLive(t *testing.T) {
	tests := []struct {
		name        string
		live        []ctrlclient.Object
		wantFailure bool
	}{
		{name: "the cache lags: left to its switch", live: []ctrlclient.Object{config("the-default", true)}},
		{name: "no default live either: not found", live: []ctrlclient.Object{config("the-default", false)}, wantFailure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond, rec := reconcileLagging(t, "the-default", append(tt.live, pool("", ""))...)
			if !tt.wantFailure {
				require.Nil(t, cond, "a class its switch is to move has no condition from the keeper")
				require.Empty(t, rec.keys, "no Warning for a default the API server has")
				return
			}
			require.NotNil(t, cond)
			require.Equal(t, v1alpha1.ReasonDefaultConfigNotFound, cond.Reason)
			require.Len(t, rec.keys, 1)
			require.Contains(t, rec.keys[0], "DefaultConfigNotFound: ")
		})
	}
}

// TestAFailingStepOfAMoveNoLongerWantedIsCleared: a class showing
// SwitchStepFailing (its switch could not protect a new default) keeps it
// while it still needs the move, and loses it, with the pool's summary True
// again, once it resolves to the config it is on (the default changed back).
func TestAFailingStepOfAMoveNoLongerWantedIsCleared(t *testing.T) {
	failing := func() *v1alpha1.WorkerPool {
		p := pool("old", "")
		p.Status.SandboxClasses[0].Conditions = []metav1.Condition{{Type: v1alpha1.ConditionSwitchStepFailing, Status: metav1.ConditionTrue,
			Reason: "Protect", Message: "Protect keeps failing, retrying with backoff: denied", ObservedGeneration: 2, LastTransitionTime: metav1.Now()}}
		return p
	}
	tests := []struct {
		name        string
		configs     []ctrlclient.Object
		wantFailing bool
		wantSummary metav1.ConditionStatus
	}{
		{name: "the new default still wanted: kept", configs: []ctrlclient.Object{config("old", false), config("new", true)},
			wantFailing: true},
		{name: "the default changed back: cleared", configs: []ctrlclient.Object{config("old", true), config("new", false)},
			wantSummary: metav1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := reconcileOnce(t, append(tt.configs, failing())...)
			c := meta.FindStatusCondition(got.Status.ClassStatus(gvisor).Conditions, v1alpha1.ConditionSwitchStepFailing)
			require.Equal(t, tt.wantFailing, c != nil, "SwitchStepFailing: %+v", c)
			summary := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
			if tt.wantFailing {
				require.Equal(t, metav1.ConditionFalse, summary.Status)
				require.Equal(t, v1alpha1.ReasonSwitchStepFailing, summary.Reason)
				return
			}
			require.Equal(t, tt.wantSummary, summary.Status)
		})
	}
}
