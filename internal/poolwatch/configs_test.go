package poolwatch

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/resolve"
)

const gvisor, microvm = v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM

// cfg is a SandboxConfig created at the given second.
func cfg(name string, class v1alpha1.SandboxClass, created int64) *v1alpha1.SandboxConfig {
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(created, 0)},
		Spec:       v1alpha1.SandboxConfigSpec{SandboxClass: class},
	}
}

func classDefault(c *v1alpha1.SandboxConfig) *v1alpha1.SandboxConfig {
	c = c.DeepCopy()
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, v1alpha1.ClassDefaultAnnotation, "true")
	return c
}

func protected(c *v1alpha1.SandboxConfig) *v1alpha1.SandboxConfig {
	c = c.DeepCopy()
	c.Finalizers = append(c.Finalizers, v1alpha1.ProtectionFinalizer)
	return c
}

func deleting(c *v1alpha1.SandboxConfig) *v1alpha1.SandboxConfig {
	c = c.DeepCopy()
	now := metav1.Unix(1000, 0)
	c.DeletionTimestamp = &now
	return c
}

func unprotected(c *v1alpha1.SandboxConfig) *v1alpha1.SandboxConfig {
	c = c.DeepCopy()
	c.Finalizers = nil
	return c
}

func TestOutcomeRelevant(t *testing.T) {
	base := protected(classDefault(cfg("c", gvisor, 10)))
	otherVersions := base.DeepCopy()
	otherVersions.Spec.DefaultVersion = "v2"
	otherVersions.Spec.Versions = []v1alpha1.SandboxConfigVersion{{Name: "v2"}}
	explicitClass := base.DeepCopy()
	explicitClass.Spec.SandboxClass = ""
	notTrue := base.DeepCopy()
	notTrue.Annotations[v1alpha1.ClassDefaultAnnotation] = "yes"
	staged := base.DeepCopy()
	staged.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Percent: ptr.To[int32](100)}}}
	admitted := staged.DeepCopy()
	admitted.Status.Rollout = &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1,
		AdmittedThrough: &v1alpha1.RolloutPoolRef{Namespace: "ns", Name: "p"}}
	moved := admitted.DeepCopy()
	moved.Status.Rollout.MovedPools, moved.Status.Rollout.Message = 3, "waiting"
	paused := admitted.DeepCopy()
	paused.Spec.Rollout.Paused = true
	completed := admitted.DeepCopy()
	completed.Status.Rollout.Phase = v1alpha1.RolloutCompleted
	tests := []struct {
		name     string
		old, cur *v1alpha1.SandboxConfig
		want     bool
	}{
		{"versions and assets move nobody", base, otherVersions, false},
		{"an empty class is gvisor", base, explicitClass, false},
		{"the finalizer a switch adds to its target", unprotected(base), base, false},
		{"a finalizer removed by hand from a config in use", base, unprotected(base), false},
		{"the finalizer released from a config in deletion", deleting(base), unprotected(deleting(base)), true},
		{"the deletion mark", base, deleting(base), true},
		{"the class default annotation removed", base, unprotected(cfg("c", gvisor, 10)), true},
		{"the class default annotation set to something other than true", base, notTrue, true},
		{"the class changed", base, protected(classDefault(cfg("c", microvm, 10))), true},
		{"a staged rollout added", base, staged, true},
		{"a rollout step admits pools", staged, admitted, true},
		{"a rollout's progress moves nobody", admitted, moved, false},
		{"pausing a rollout moves nobody", admitted, paused, false},
		{"a completed rollout admits every pool", admitted, completed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, outcomeRelevant(tt.old, tt.cur))
		})
	}
}

func pool(name string, class v1alpha1.SandboxClass, pinnedTo, statusConfig string) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: class}}},
	}
	if pinnedTo != "" {
		p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: pinnedTo}
	}
	if statusConfig != "" {
		p.Status.SandboxClasses = []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: class, ConfigRef: &v1alpha1.SandboxConfigReference{Name: statusConfig},
		}}
	}
	return p
}

// newSignaller is a ConfigEvents whose cache is a fake client holding objs,
// with the indexes Index sets up.
func newSignaller(t *testing.T, objs ...ctrlclient.Object) ConfigEvents {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...)
	idx := &recordingIndexer{}
	require.NoError(t, Index(context.Background(), idx))
	for field, fn := range idx.fns {
		b = b.WithIndex(&v1alpha1.WorkerPool{}, field, fn)
	}
	return ConfigEvents{Cache: b.Build()}
}

// recordingIndexer collects the index functions Index registers, so the
// test uses exactly those.
type recordingIndexer struct {
	fns map[string]ctrlclient.IndexerFunc
}

func (r *recordingIndexer) IndexField(_ context.Context, _ ctrlclient.Object, field string, fn ctrlclient.IndexerFunc) error {
	if r.fns == nil {
		r.fns = map[string]ctrlclient.IndexerFunc{}
	}
	r.fns[field] = fn
	return nil
}

// woken runs one config event through the signaller's handler and returns
// the pools it enqueued, sorted.
func woken(t *testing.T, r ConfigEvents, fire func(context.Context, workqueueRL)) []string {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	fire(context.Background(), q)
	var names []string
	for q.Len() > 0 {
		req, _ := q.Get()
		names = append(names, req.Name)
		q.Done(req)
	}
	sort.Strings(names)
	return names
}

func update(r ConfigEvents, old, cur *v1alpha1.SandboxConfig) func(context.Context, workqueueRL) {
	return func(ctx context.Context, q workqueueRL) {
		r.Handler().Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
	}
}

func remove(r ConfigEvents, last *v1alpha1.SandboxConfig) func(context.Context, workqueueRL) {
	return func(ctx context.Context, q workqueueRL) {
		r.Handler().Delete(ctx, event.DeleteEvent{Object: last}, q)
	}
}

// TestASwitchDoesNotWakeThePoolsTwice: the switch's finalizer on the new
// default is not a change any pool resolves differently on.
func TestASwitchDoesNotWakeThePoolsTwice(t *testing.T) {
	v2 := classDefault(cfg("v2", gvisor, 20))
	r := newSignaller(t, protected(v2),
		pool("a", gvisor, "", "v2"), pool("b", gvisor, "", ""), pool("pinned", gvisor, "v2", "v2"))
	require.Empty(t, woken(t, r, update(r, v2, protected(v2))))

	// The release of a config in deletion still wakes the pools keeping it:
	// without the finalizer they must let it go.
	gone := deleting(protected(v2))
	require.Equal(t, []string{"a", "pinned"}, woken(t, r, update(r, gone, unprotected(gone))))
}

func TestUnpinnedClassesToWake(t *testing.T) {
	v1 := protected(classDefault(cfg("v1", gvisor, 10)))
	v2 := protected(classDefault(cfg("v2", gvisor, 20)))
	plain := protected(cfg("plain", gvisor, 30))
	vm := protected(classDefault(cfg("vm", microvm, 40)))
	// sameSecond is created in v2's second and sorts after it.
	sameSecond := protected(classDefault(cfg("w", gvisor, 20)))
	from := func(cs ...*v1alpha1.SandboxConfig) []resolve.Config {
		var out []resolve.Config
		for _, c := range cs {
			out = append(out, resolve.ConfigFrom(c))
		}
		return out
	}
	tests := []struct {
		name     string
		old, cur *v1alpha1.SandboxConfig
		others   []resolve.Config
		want     []v1alpha1.SandboxClass
	}{
		{name: "a newer default created", cur: v2, others: from(v1), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "an older default created: still woken, as every new candidate", cur: v1, others: from(v2), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "a plain config created", cur: plain, others: from(v1)},
		{name: "a default created in deletion (the start-up list)", cur: deleting(v1), others: from(v2)},
		{name: "the newest default marked for deletion", old: v2, cur: deleting(v2), others: from(v1), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "the only default marked for deletion", old: v1, cur: deleting(v1), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "an older default marked for deletion", old: v1, cur: deleting(v1), others: from(v2)},
		{name: "an older default deleted after its mark", old: deleting(v1), others: from(v2)},
		{name: "the newest default deleted after its mark", old: deleting(v2), others: from(v1)},
		{name: "the newest default deleted at once (no finalizer)", old: unprotected(v2), others: from(v1), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "an older default deleted at once", old: unprotected(v1), others: from(v2)},
		{name: "a newer default already in deletion does not count", old: v1, cur: deleting(v1), others: from(deleting(v2)), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "a newer default of another class does not count", old: v1, cur: deleting(v1), others: from(vm), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "same second: the name that sorts first is the newest", old: v2, cur: deleting(v2), others: from(sameSecond), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "same second: the name that sorts after is not", old: sameSecond, cur: deleting(sameSecond), others: from(v2)},
		{name: "the annotation removed from the newest default", old: v2, cur: protected(cfg("v2", gvisor, 20)), others: from(v1), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "the annotation removed from an older default", old: v1, cur: protected(cfg("v1", gvisor, 10)), others: from(v2)},
		{name: "the annotation added", old: protected(cfg("v1", gvisor, 10)), cur: v1, others: from(v2), want: []v1alpha1.SandboxClass{gvisor}},
		{name: "an older default moved to another class", old: v1, cur: protected(classDefault(cfg("v1", microvm, 10))), others: from(v2), want: []v1alpha1.SandboxClass{microvm}},
		{name: "the newest default moved to another class", old: v2, cur: protected(classDefault(cfg("v2", microvm, 20))), others: from(v1), want: []v1alpha1.SandboxClass{microvm, gvisor}},
		{name: "a default in deletion releasing its finalizer", old: deleting(v2), cur: unprotected(deleting(v2)), others: from(v1)},
		{name: "a plain config marked for deletion", old: plain, cur: deleting(plain), others: from(v1)},
		{name: "nothing known of the others: woken as if the newest", old: v1, cur: deleting(v1), want: []v1alpha1.SandboxClass{gvisor}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, unpinnedClassesToWake(tt.old, tt.cur, func() []resolve.Config { return tt.others }))
		})
	}
}

// TestDeletingAnOldDefaultWakesOnlyItsUsers: the release of the default the
// pools moved off (the bench's release) wakes the pools that name it, not
// every unpinned pool of the class, at its deletion mark and at its deletion.
func TestDeletingAnOldDefaultWakesOnlyItsUsers(t *testing.T) {
	v1 := protected(classDefault(cfg("v1", gvisor, 10)))
	v2 := protected(classDefault(cfg("v2", gvisor, 20)))
	r := newSignaller(t, deleting(v1), v2,
		pool("moved1", gvisor, "", "v2"), pool("moved2", gvisor, "", "v2"), pool("new", gvisor, "", ""),
		pool("still-on-v1", gvisor, "", "v1"), pool("pinned-to-v1", gvisor, "v1", "v1"),
		pool("vm", microvm, "", ""))
	require.Equal(t, []string{"pinned-to-v1", "still-on-v1"}, woken(t, r, update(r, v1, deleting(v1))))
	require.Equal(t, []string{"pinned-to-v1", "still-on-v1"}, woken(t, r, remove(r, unprotected(deleting(v1)))))

	// Deleting the newest default moves every unpinned pool of its class.
	r = newSignaller(t, v1, deleting(v2),
		pool("moved1", gvisor, "", "v2"), pool("new", gvisor, "", ""), pool("pinned-to-v1", gvisor, "v1", "v1"),
		pool("vm", microvm, "", ""))
	require.Equal(t, []string{"moved1", "new"}, woken(t, r, update(r, v2, deleting(v2))))
}
