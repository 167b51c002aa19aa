package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestAStatusWriteKeepsWhatItWasNotGiven: the switch's status writes change
// only the class's refs and Resolved condition (and the summary): the
// replica fields and selector the pool keeper mirrors, observedGeneration,
// and conditions of other types (another controller's, on the class or the
// pool) are kept as they are.
func TestAStatusWriteKeepsWhatItWasNotGiven(t *testing.T) {
	other := metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Audited", Message: "by someone else",
		LastTransitionTime: metav1.Unix(1_700_000_000, 0)}
	writes := []struct {
		name    string
		wantRef string
		write   func(f *statusFixture) error
	}{
		{name: "Claim", wantRef: "old", write: func(f *statusFixture) error {
			_, err := f.acts.Claim(context.Background(), ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
			return err
		}},
		{name: "Confirm", wantRef: "new", write: func(f *statusFixture) error {
			// Confirm writes only over its own claim.
			if _, err := f.acts.Claim(context.Background(), ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"}); err != nil {
				return err
			}
			_, err := f.acts.Confirm(context.Background(), SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2})
			return err
		}},
		{name: "RollBack", wantRef: "old", write: func(f *statusFixture) error {
			_, err := f.acts.RollBack(context.Background(), SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2,
				Reason: v1alpha1.ReasonSandboxConfigNotFound, Message: "gone", From: "old"})
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			f := newStatusFixture(t)
			ctx := context.Background()
			p := f.pool(t)
			p.Status.Replicas, p.Status.ReadyReplicas, p.Status.Selector = 3, 2, "ate.dev/worker-pool=pool"
			p.Status.ObservedGeneration = 2
			p.Status.Conditions = []metav1.Condition{other}
			p.Status.SandboxClasses[0].Conditions = []metav1.Condition{other}
			require.NoError(t, f.store.Status().Update(ctx, p))

			require.NoError(t, w.write(f))
			got := f.pool(t).Status
			require.Equal(t, int32(3), got.Replicas)
			require.Equal(t, int32(2), got.ReadyReplicas)
			require.Equal(t, "ate.dev/worker-pool=pool", got.Selector)
			require.Equal(t, int64(2), got.ObservedGeneration)
			require.Equal(t, &other, meta.FindStatusCondition(got.Conditions, other.Type))
			require.Equal(t, &other, meta.FindStatusCondition(got.SandboxClasses[0].Conditions, other.Type))
			require.Equal(t, w.wantRef, got.SandboxClasses[0].ConfigRef.Name, "the write made its own change too")
		})
	}
}
