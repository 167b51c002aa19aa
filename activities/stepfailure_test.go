package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestAFailingStepReportsOnItsClass: a step that keeps failing sets the
// class's SwitchStepFailing condition and records one Warning per distinct
// error of its run, from its reportStepFailureAfter-th attempt; its retries
// add nothing; the pool's SandboxConfigResolved says the move fails while
// it does; the next status write of the switch clears the condition.
func TestAFailingStepReportsOnItsClass(t *testing.T) {
	f := newStatusFixture(t)
	cs := kubefake.NewClientset()
	f.acts.Clientset = cs
	ctx := context.Background()
	refused := errors.New(`sandboxconfigs.ate.dev "new" is forbidden: ValidatingAdmissionPolicy 'no' denied request`)
	quota := errors.New(`exceeded quota: q`)

	steps := []struct {
		name      string
		attempt   int32
		err       error
		wantCond  string // the condition's message; "" for none
		wantWarns int
	}{
		{name: "early attempts say nothing", attempt: reportStepFailureAfter - 1, err: refused},
		{name: "the reporting attempt", attempt: reportStepFailureAfter, err: refused,
			wantCond: StepFailureMessage(StepProtect, refused), wantWarns: 1},
		{name: "its retries add nothing", attempt: reportStepFailureAfter + 5, err: refused,
			wantCond: StepFailureMessage(StepProtect, refused), wantWarns: 1},
		{name: "an error no retry fixes fails the switch instead", attempt: reportStepFailureAfter + 6,
			err:      temporal.NewNonRetryableApplicationError("bad", ErrInvalidInput, nil),
			wantCond: StepFailureMessage(StepProtect, refused), wantWarns: 1},
		{name: "another error: the condition says it, and one more Warning", attempt: reportStepFailureAfter + 7, err: quota,
			wantCond: StepFailureMessage(StepProtect, quota), wantWarns: 2},
	}
	for _, s := range steps {
		f.acts.reportFailure(ctx, s.attempt, "run-1", StepProtect, f.ref, gvisor, s.err)
		pool := f.pool(t)
		st := pool.Status.ClassStatus(gvisor)
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing)
		summary := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
		if s.wantCond == "" {
			require.Nil(t, c, s.name)
			require.Nil(t, summary, s.name+": the fixture's pool has no summary until a report")
		} else {
			require.NotNil(t, c, s.name)
			require.Equal(t, metav1.ConditionTrue, c.Status, s.name)
			require.Equal(t, StepProtect, c.Reason, s.name)
			require.Equal(t, s.wantCond, c.Message, s.name)
			require.NotNil(t, summary, s.name)
			require.Equal(t, metav1.ConditionFalse, summary.Status, s.name)
			require.Equal(t, v1alpha1.ReasonSwitchStepFailing, summary.Reason, s.name)
			require.Equal(t, `the switch of sandbox class "gvisor" from "old" is failing: `+s.wantCond, summary.Message, s.name)
		}
		evs, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, evs.Items, s.wantWarns, s.name)
		for _, ev := range evs.Items {
			require.Equal(t, "Warning", ev.Type)
			require.Equal(t, v1alpha1.EventReasonSwitchStepFailing, ev.Reason)
			require.Contains(t, ev.Note, `sandbox class "gvisor": Protect keeps failing, retrying with backoff: `)
		}
	}
	require.Equal(t, "old", f.pool(t).Status.ClassStatus(gvisor).ConfigRef.Name, "the report touches nothing else")

	// The step succeeds at last and the switch claims: the condition goes.
	_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new", ExpectFrom: true, From: "old"})
	require.NoError(t, err)
	pool := f.pool(t)
	st := pool.Status.ClassStatus(gvisor)
	require.Nil(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing))
	require.Equal(t, "new", st.PendingConfigRef.Name)
	require.Equal(t, v1alpha1.ReasonSwitching, meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved).Reason)
}

// TestAStepOfAnotherPoolReportsNothing: a pool recreated under the name is
// not the switch's, and a report without the pool's identity (a step
// scheduled without it) is skipped.
func TestAStepOfAnotherPoolReportsNothing(t *testing.T) {
	for _, ref := range []wfapi.PoolRef{
		{Namespace: "ns", Name: "pool", UID: "uid-other"},
		{},
	} {
		f := newStatusFixture(t)
		cs := kubefake.NewClientset()
		f.acts.Clientset = cs
		f.acts.reportFailure(context.Background(), reportStepFailureAfter, "run-1", StepProtect, ref, gvisor, errors.New("refused"))
		require.Empty(t, f.pool(t).Status.ClassStatus(gvisor).Conditions)
		evs, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, evs.Items)
	}
}
