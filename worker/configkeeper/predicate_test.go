package configkeeper

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestNotOwnWrite: the keeper's own writes wake nobody (each would cost a
// look at every config of the class), every other change does.
func TestNotOwnWrite(t *testing.T) {
	base := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1", Generation: 1},
		Status:     v1alpha1.SandboxConfigStatus{Rollout: &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing}},
	}
	tests := []struct {
		name   string
		change func(c *v1alpha1.SandboxConfig)
		wakes  bool
	}{
		{"the keeper's write: conditions and observedGeneration", func(c *v1alpha1.SandboxConfig) {
			c.Status.ObservedGeneration = 1
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RolloutProgressing"}}
		}, false},
		{"the rollout's write", func(c *v1alpha1.SandboxConfig) { c.Status.Rollout.Phase = v1alpha1.RolloutHalted }, true},
		{"a spec edit", func(c *v1alpha1.SandboxConfig) { c.Generation, c.Spec.DefaultVersion = 2, "v2" }, true},
		{"the class-default annotation", func(c *v1alpha1.SandboxConfig) {
			c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
		}, true},
		{"a deletion mark", func(c *v1alpha1.SandboxConfig) { c.DeletionTimestamp = new(metav1.Now()) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.change(cur)
			cur.ResourceVersion = "2"
			require.Equal(t, tt.wakes, notOwnWrite(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}))
		})
	}
}
