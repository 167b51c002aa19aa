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

func TestAChangedFailureIsANewTransition(t *testing.T) {
	clock := time.Unix(1000, 0)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	tests := []struct {
		name string
		set  func(st *v1alpha1.WorkerPoolStatus, reason, message string, ok bool) metav1.Time
		// moves: a changed failure takes a new time.
		moves bool
	}{
		{name: "a class's Resolved", moves: true, set: func(st *v1alpha1.WorkerPoolStatus, reason, message string, ok bool) metav1.Time {
			SetClassCondition(st, v1alpha1.SandboxClassGVisor, ClassCondition(ok, reason, message, 1))
			return meta.FindStatusCondition(st.SandboxClasses[0].Conditions, v1alpha1.ConditionResolved).LastTransitionTime
		}},
		{name: "the pool's DeploymentApplied", moves: true, set: poolCondition(v1alpha1.ConditionDeploymentApplied)},
		{name: "the pool's Available: no Warning, its message counts workers", set: poolCondition(v1alpha1.ConditionAvailable)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st v1alpha1.WorkerPoolStatus
			x := tc.set(&st, "NotFound", "x not found", false)
			require.Equal(t, x, tc.set(&st, "NotFound", "x not found", false), "the same failure again: the same time")
			y := tc.set(&st, "NotFound", "y not found", false)
			if !tc.moves {
				require.Equal(t, x, y)
				require.Equal(t, x, tc.set(&st, "Mismatch", "x not found", false))
				return
			}
			require.Equal(t, x.Add(time.Second), y.Time, "another message: a new time")
			xAgain := tc.set(&st, "NotFound", "x not found", false)
			require.Equal(t, y.Add(time.Second), xAgain.Time, "changed back: a new time, not the first one's")
			reason := tc.set(&st, "Mismatch", "x not found", false)
			require.Equal(t, xAgain.Add(time.Second), reason.Time, "another reason: a new time")
			ok := tc.set(&st, "Resolved", "fine", true)
			require.Equal(t, reason.Add(time.Second), ok.Time)
			require.Equal(t, ok, tc.set(&st, "Resolved", "fine now", true), "a True condition's message is no transition")
		})
	}
}

func poolCondition(conditionType string) func(st *v1alpha1.WorkerPoolStatus, reason, message string, ok bool) metav1.Time {
	return func(st *v1alpha1.WorkerPoolStatus, reason, message string, ok bool) metav1.Time {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		SetPoolCondition(st, metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message, ObservedGeneration: 1})
		return meta.FindStatusCondition(st.Conditions, conditionType).LastTransitionTime
	}
}

func TestSummary(t *testing.T) {
	const gen = int64(2)
	class := v1alpha1.SandboxClassGVisor
	unpinned := []v1alpha1.WorkerPoolSandboxClass{{Name: class}}
	pinnedTo := func(name string) []v1alpha1.WorkerPoolSandboxClass {
		return []v1alpha1.WorkerPoolSandboxClass{{Name: class, ConfigRef: &v1alpha1.SandboxConfigReference{Name: name}}}
	}
	ref := func(name string) *v1alpha1.SandboxConfigReference {
		if name == "" {
			return nil
		}
		return &v1alpha1.SandboxConfigReference{Name: name}
	}
	entry := func(current, pending string, conds ...metav1.Condition) []v1alpha1.WorkerPoolSandboxClassStatus {
		return []v1alpha1.WorkerPoolSandboxClassStatus{{Name: class, ConfigRef: ref(current), PendingConfigRef: ref(pending), Conditions: conds}}
	}
	resolvedAt := func(g int64) metav1.Condition {
		return ClassCondition(true, v1alpha1.ReasonResolved, `resolved to SandboxConfig "a"`, g)
	}
	failedAt := func(g int64) metav1.Condition {
		return ClassCondition(false, v1alpha1.ReasonSandboxConfigNotFound, `SandboxConfig "b" not found; keeping "a"`, g)
	}
	stepFailing := metav1.Condition{Type: v1alpha1.ConditionSwitchStepFailing, Status: metav1.ConditionTrue,
		Reason: "Protect", Message: `Protect keeps failing, retrying with backoff: SandboxConfig "b": denied`, ObservedGeneration: gen}
	cases := []struct {
		name    string
		spec    []v1alpha1.WorkerPoolSandboxClass
		classes []v1alpha1.WorkerPoolSandboxClassStatus
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "no status yet", spec: unpinned,
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonPending, message: `sandbox class "gvisor" has not been resolved yet`},
		{name: "first claim, no condition yet", spec: unpinned, classes: entry("", "a"),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching to "a"`},
		{name: "resolved at this generation", spec: unpinned, classes: entry("a", "", resolvedAt(gen)),
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonResolved, message: SummaryResolvedMessage},
		{name: "pinned and on it", spec: pinnedTo("a"), classes: entry("a", "", resolvedAt(gen)),
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonResolved, message: SummaryResolvedMessage},
		{name: "claim of a default's wave", spec: unpinned, classes: entry("a", "b", resolvedAt(gen)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching from "a" to "b"`},
		{name: "re-pinned, no switch yet (Temporal down)", spec: pinnedTo("b"), classes: entry("a", "", resolvedAt(gen-1)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching from "a" to "b"`},
		{name: "re-pinned, condition rewritten at the generation", spec: pinnedTo("b"), classes: entry("a", "", resolvedAt(gen)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching from "a" to "b"`},
		{name: "re-pinned, claimed", spec: pinnedTo("b"), classes: entry("a", "b", resolvedAt(gen-1)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching from "a" to "b"`},
		{name: "pin that cannot be met at this generation", spec: pinnedTo("b"), classes: entry("a", "", failedAt(gen)),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSandboxConfigNotFound, message: `sandbox class "gvisor": SandboxConfig "b" not found; keeping "a"`},
		{name: "re-pinned after a failure of an earlier generation", spec: pinnedTo("c"), classes: entry("a", "", failedAt(gen-1)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonSwitching, message: `sandbox class "gvisor" is switching from "a" to "c"`},
		{name: "unpinned failure", spec: unpinned, classes: entry("a", "", failedAt(gen)),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSandboxConfigNotFound, message: `sandbox class "gvisor": SandboxConfig "b" not found; keeping "a"`},
		{name: "a new default's move failing: the target only the step's error names", spec: unpinned, classes: entry("a", "", resolvedAt(gen), stepFailing),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSwitchStepFailing,
			message: `the switch of sandbox class "gvisor" from "a" is failing: Protect keeps failing, retrying with backoff: SandboxConfig "b": denied`},
		{name: "a re-pin's move failing", spec: pinnedTo("b"), classes: entry("a", "", resolvedAt(gen-1), stepFailing),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSwitchStepFailing,
			message: `the switch of sandbox class "gvisor" from "a" to "b" is failing: Protect keeps failing, retrying with backoff: SandboxConfig "b": denied`},
		{name: "a claimed move failing", spec: unpinned, classes: entry("a", "b", resolvedAt(gen), stepFailing),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSwitchStepFailing,
			message: `the switch of sandbox class "gvisor" from "a" to "b" is failing: Protect keeps failing, retrying with backoff: SandboxConfig "b": denied`},
		{name: "a first resolution failing", spec: unpinned, classes: entry("", "", stepFailing),
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonSwitchStepFailing,
			message: `the switch of sandbox class "gvisor" is failing: Protect keeps failing, retrying with backoff: SandboxConfig "b": denied`},
		{name: "confirmed for an earlier generation", spec: unpinned, classes: entry("a", "", resolvedAt(gen-1)),
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonPending, message: `sandbox class "gvisor" has not been resolved for generation 2 yet`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Summary(tc.spec, tc.classes, gen)
			require.Equal(t, v1alpha1.ConditionSandboxConfigResolved, got.Type)
			require.Equal(t, tc.status, got.Status)
			require.Equal(t, tc.reason, got.Reason)
			require.Equal(t, tc.message, got.Message)
			require.Equal(t, gen, got.ObservedGeneration)
		})
	}
}
