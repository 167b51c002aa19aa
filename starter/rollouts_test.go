package starter

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		name        string
		phase       v1alpha1.RolloutPhase
		notDefault  bool
		generation  int64
		resume      string
		wantStart   bool
		wantSignals []string
		wantRequeue time.Duration
	}{
		{name: "new: started and told to look (an old incarnation's run may hold the ID)", wantStart: true,
			wantSignals: []string{wfapi.SignalRecheck}, wantRequeue: activeResync},
		{name: "progressing: started again (a run terminated by hand comes back)", phase: v1alpha1.RolloutProgressing, wantStart: true, wantRequeue: activeResync},
		{name: "baking", phase: v1alpha1.RolloutBaking, wantStart: true, wantRequeue: activeResync},
		{name: "awaiting clusters: started again (a run terminated by hand comes back)", phase: v1alpha1.RolloutAwaitingClusters, wantStart: true, wantRequeue: activeResync},
		{name: "halted with its run gone: started again", phase: v1alpha1.RolloutHalted, wantStart: true, wantRequeue: activeResync},
		{name: "a spec edit not taken in: the v0.1.0 signal and a recheck", phase: v1alpha1.RolloutHalted, generation: 2, wantStart: true,
			wantSignals: []string{wfapi.SignalResume, wfapi.SignalRecheck}, wantRequeue: activeResync},
		{name: "a resume request not answered: a recheck", phase: v1alpha1.RolloutHalted, resume: "1", wantStart: true,
			wantSignals: []string{wfapi.SignalRecheck}, wantRequeue: activeResync},
		{name: "stopped", phase: v1alpha1.RolloutStopped, wantStart: true, wantRequeue: restartLook},
		{name: "superseded", phase: v1alpha1.RolloutSuperseded, wantStart: true, wantRequeue: restartLook},
		{name: "completed", phase: v1alpha1.RolloutCompleted},
		{name: "halted and no longer a default: a run writes the end", phase: v1alpha1.RolloutHalted, notDefault: true, wantStart: true,
			wantSignals: []string{wfapi.SignalRecheck}, wantRequeue: activeResync},
		{name: "stopped and no longer a default: nothing", phase: v1alpha1.RolloutStopped, notDefault: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.SandboxConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "new", Generation: max(tt.generation, 1),
					Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: fmt.Sprint(!tt.notDefault)}},
				Spec: v1alpha1.SandboxConfigSpec{
					SandboxClass: v1alpha1.SandboxClassGVisor,
					Rollout:      &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Percent: &hundred}}},
				},
			}
			if tt.resume != "" {
				c.Annotations[v1alpha1.RolloutResumeAnnotation] = tt.resume
			}
			if tt.phase != "" {
				c.Status.Rollout = &v1alpha1.RolloutStatus{Phase: tt.phase, ObservedGeneration: 1, WorkflowID: "w"}
			}
			cache := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(c).Build()
			temporal := &mocks.Client{}
			if tt.wantStart {
				temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, wfapi.RolloutWorkflow, mock.Anything).
					Return(&mocks.WorkflowRun{}, nil).Once()
			}
			var signals []string
			temporal.On("SignalWorkflow", mock.Anything, mock.Anything, "", mock.Anything, mock.Anything).
				Run(func(args mock.Arguments) { signals = append(signals, args.String(3)) }).Return(nil).Maybe()
			r := &rolloutStarter{cache: cache, temporal: temporal, scope: wfapi.ScopeOf("test", "")}

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "new"}})
			require.NoError(t, err)
			temporal.AssertExpectations(t)
			require.Equal(t, tt.wantSignals, signals, "signals sent")
			require.Equal(t, tt.wantRequeue, res.RequeueAfter, "looked at again")
		})
	}
}

// A rolling config's rollout is asked to look for every request it has not
// answered, whichever verb made it, and not again once it answered it.
func TestNeedsLookForEveryUnansweredRequest(t *testing.T) {
	for _, annotation := range []string{v1alpha1.RolloutPauseAnnotation, v1alpha1.RolloutResumeAnnotation, v1alpha1.RolloutPromoteAnnotation,
		v1alpha1.RolloutPromoteFullAnnotation, v1alpha1.RolloutAbortAnnotation, v1alpha1.RolloutRetryAnnotation} {
		t.Run(annotation, func(t *testing.T) {
			c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: "new", Generation: 2, Annotations: map[string]string{annotation: "t1"}},
				Status: v1alpha1.SandboxConfigStatus{Rollout: &v1alpha1.RolloutStatus{ObservedGeneration: 2}}}
			require.True(t, needsLook(c), "a new request")
			st := c.Status.Rollout
			st.PauseRequest, st.ResumeRequest, st.PromoteRequest, st.PromoteFullRequest, st.AbortRequest, st.RetryRequest = "t1", "t1", "t1", "t1", "t1", "t1"
			require.False(t, needsLook(c), "answered")
		})
	}
}
