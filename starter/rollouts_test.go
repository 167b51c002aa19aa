package starter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestARolloutRestartedWhileItsLastRunEndsIsLookedAtAgain: a config
// annotated again right after its rollout wrote Stopped (or Superseded) is
// started while that run may still be ending, and the start joins the
// ending run. Its end changes no config, so unless the starter looks again
// by itself, the rollout never restarts (CI saw exactly this:
// TestStagedRolloutEnds stayed Stopped for a minute). A rollout whose run
// is under way, or that completed, needs no second look.
func TestARolloutRestartedWhileItsLastRunEndsIsLookedAtAgain(t *testing.T) {
	hundred := int32(100)
	tests := []struct {
		phase       v1alpha1.RolloutPhase
		wantStart   bool
		wantRequeue bool
	}{
		{phase: "", wantStart: true},
		{phase: v1alpha1.RolloutProgressing, wantStart: true},
		{phase: v1alpha1.RolloutBaking, wantStart: true},
		{phase: v1alpha1.RolloutStopped, wantStart: true, wantRequeue: true},
		{phase: v1alpha1.RolloutSuperseded, wantStart: true, wantRequeue: true},
		{phase: v1alpha1.RolloutCompleted},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			c := &v1alpha1.SandboxConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "new", Generation: 1,
					Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
				Spec: v1alpha1.SandboxConfigSpec{
					SandboxClass: v1alpha1.SandboxClassGVisor,
					Rollout:      &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Percent: &hundred}}},
				},
			}
			if tt.phase != "" {
				c.Status.Rollout = &v1alpha1.RolloutStatus{Phase: tt.phase, ObservedGeneration: 1}
			}
			cache := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(c).Build()
			temporal := &mocks.Client{}
			if tt.wantStart {
				temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, wfapi.RolloutWorkflow, mock.Anything).
					Return(&mocks.WorkflowRun{}, nil).Once()
			}
			r := &rolloutStarter{cache: cache, temporal: temporal, scope: wfapi.ScopeOf("test", "")}

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "new"}})
			require.NoError(t, err)
			temporal.AssertExpectations(t)
			if tt.wantRequeue {
				require.Equal(t, restartLook, res.RequeueAfter, "looked at again after the last run's end")
			} else {
				require.Zero(t, res.RequeueAfter)
			}
		})
	}
}
