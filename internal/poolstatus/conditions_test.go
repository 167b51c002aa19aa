package poolstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestTransitionsNameTheirSecond(t *testing.T) {
	clock := time.Unix(1000, 300_000_000)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	var st v1alpha1.WorkerPoolStatus
	set := func(ok bool) metav1.Time {
		SetClassCondition(&st, v1alpha1.SandboxClassGVisor, ClassCondition(ok, "R", "m", 1))
		return meta.FindStatusCondition(st.SandboxClasses[0].Conditions, v1alpha1.ConditionResolved).LastTransitionTime
	}
	first := set(false)
	require.Equal(t, time.Unix(1000, 0), first.Time, "a first condition takes the clock, in whole seconds")
	require.Equal(t, time.Unix(1001, 0), set(true).Time, "a flap within the second moves to the next one")
	second := set(false)
	require.Equal(t, time.Unix(1002, 0), second.Time)
	require.NotEqual(t, first, second, "two appearances of one failure have two times")
	require.Equal(t, second, set(false), "no transition, no new time")
	clock = time.Unix(2000, 0)
	require.Equal(t, time.Unix(2000, 0), set(true).Time, "the clock once it is ahead")
}
