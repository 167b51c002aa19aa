package poolwatch

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/notify"
)

// TestNotifyClasses: a pool event wakes the waiters of each class the pool
// follows the default of, before or after the change, and no other; a
// deletion seen only as a tombstone too.
func TestNotifyClasses(t *testing.T) {
	pool := func(classes ...v1alpha1.WorkerPoolSandboxClass) *v1alpha1.WorkerPool {
		return &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1alpha1.WorkerPoolSpec{SandboxClasses: classes}}
	}
	gvisor := v1alpha1.WorkerPoolSandboxClass{Name: v1alpha1.SandboxClassGVisor}
	pinned := v1alpha1.WorkerPoolSandboxClass{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "c"}}
	microvm := v1alpha1.WorkerPoolSandboxClass{Name: v1alpha1.SandboxClassMicroVM}
	for _, tc := range []struct {
		name  string
		event func(toolscache.ResourceEventHandler)
		woken []v1alpha1.SandboxClass
	}{
		{"added", func(h toolscache.ResourceEventHandler) { h.OnAdd(pool(gvisor), false) }, []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor}},
		{"added, pinned", func(h toolscache.ResourceEventHandler) { h.OnAdd(pool(pinned), false) }, nil},
		{"updated", func(h toolscache.ResourceEventHandler) { h.OnUpdate(pool(microvm), pool(microvm)) }, []v1alpha1.SandboxClass{v1alpha1.SandboxClassMicroVM}},
		{"pinned by the update", func(h toolscache.ResourceEventHandler) { h.OnUpdate(pool(gvisor), pool(pinned)) }, []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor}},
		{"unpinned by the update", func(h toolscache.ResourceEventHandler) { h.OnUpdate(pool(pinned), pool(gvisor)) }, []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor}},
		{"deleted", func(h toolscache.ResourceEventHandler) { h.OnDelete(pool(gvisor, microvm)) },
			[]v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM}},
		{"deleted, a tombstone", func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pool(microvm)})
		}, []v1alpha1.SandboxClass{v1alpha1.SandboxClassMicroVM}},
		{"not a pool", func(h toolscache.ResourceEventHandler) { h.OnAdd(&v1alpha1.SandboxConfig{}, false) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n notify.Notifier
			waits := map[v1alpha1.SandboxClass]<-chan struct{}{}
			for _, class := range []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM} {
				waits[class] = n.Changed(string(class))
			}
			tc.event(NotifyClasses(&n))
			var woken []v1alpha1.SandboxClass
			for _, class := range []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM} {
				select {
				case <-waits[class]:
					woken = append(woken, class)
				default:
				}
			}
			require.Equal(t, tc.woken, woken)
		})
	}
}
