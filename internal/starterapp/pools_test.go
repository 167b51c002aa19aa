package starterapp

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
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

// newSignaller is a poolSignaller whose cache is a fake client holding objs,
// with the starter's indexes.
func newSignaller(t *testing.T, objs ...ctrlclient.Object) *poolSignaller {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
		WithIndex(&v1alpha1.WorkerPool{}, activities.PoolsByConfigIndex, activities.IndexPoolsByConfig)
	idx := &recordingIndexer{}
	require.NoError(t, indexPools(context.Background(), idx))
	for field, fn := range idx.fns {
		if field != activities.PoolsByConfigIndex {
			b = b.WithIndex(&v1alpha1.WorkerPool{}, field, fn)
		}
	}
	return &poolSignaller{cache: b.Build()}
}

// recordingIndexer collects the index functions indexPools registers, so the
// test uses exactly the starter's.
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
func woken(t *testing.T, r *poolSignaller, fire func(context.Context, workqueueRL)) []string {
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

func update(r *poolSignaller, old, cur *v1alpha1.SandboxConfig) func(context.Context, workqueueRL) {
	return func(ctx context.Context, q workqueueRL) {
		r.configEvents().Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
	}
}

func remove(r *poolSignaller, last *v1alpha1.SandboxConfig) func(context.Context, workqueueRL) {
	return func(ctx context.Context, q workqueueRL) {
		r.configEvents().Delete(ctx, event.DeleteEvent{Object: last}, q)
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
	require.Equal(t, []string{"a", "b", "pinned"}, woken(t, r, update(r, gone, unprotected(gone))))
}
