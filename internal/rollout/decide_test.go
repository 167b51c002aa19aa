package rollout

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

// rolling is a config "new" of class gvisor, annotated default, with the
// steps [1 pool, 10%, 50%, 100%] and the status st.
func rolling(st *v1alpha1.RolloutStatus, edit ...func(*v1alpha1.SandboxConfig)) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "uid-1", Generation: 1,
			Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
		Spec: v1alpha1.SandboxConfigSpec{SandboxClass: v1alpha1.SandboxClassGVisor, Rollout: &v1alpha1.SandboxConfigRollout{
			Steps: []v1alpha1.RolloutStep{{Pools: ptr.To[int32](1)}, {Percent: ptr.To[int32](10)}, {Percent: ptr.To[int32](50)}, {Percent: ptr.To[int32](100)}}}},
		Status: v1alpha1.SandboxConfigStatus{Rollout: st},
	}
	for _, e := range edit {
		e(c)
	}
	return c
}

// all is the status of a rollout at step n that admitted every one of
// the pools(20, nil, 7).
func all(n int32) *v1alpha1.RolloutStatus {
	return &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: n, AdmittedCanaries: []string{"ns/p07"},
		AdmittedThrough: &v1alpha1.RolloutPoolRef{Namespace: "ns", Name: "p19"}}
}

// TestDecide walks the planner through what happens to a rollout over
// time: every everyday action of issue 45, each as the facts a look of
// the rollout reads, and the verdict the workflow then executes.
func TestDecide(t *testing.T) {
	now := metav1.Now()
	twenty := pools(20, nil, 7)
	resumeAnnotation := func(v string) func(*v1alpha1.SandboxConfig) {
		return func(c *v1alpha1.SandboxConfig) { c.Annotations[v1alpha1.RolloutResumeAnnotation] = v }
	}
	paused := func(c *v1alpha1.SandboxConfig) { c.Spec.Rollout.Paused = true }
	halted := &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 1, Message: "gate failed",
		Halt: &v1alpha1.RolloutHalt{Step: 1, Message: "gate failed"}, ResumeRequest: "r1"}
	for _, tc := range []struct {
		name   string
		facts  Facts
		want   Verdict
		reason string
	}{
		{name: "a new run of a new rollout takes step 1",
			facts: Facts{Config: rolling(nil), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 1, Done: 0, UID: "uid-1"}},
		{name: "created paused: holds before step 1",
			facts: Facts{Config: rolling(nil, paused), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Message: "paused: no more pools move until spec.rollout.paused is false", UID: "uid-1"}},
		{name: "a new run goes on where status stands: its step is taken again",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2}), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1"}},
		{name: "after step 2 the run takes step 3",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2}), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want:  Verdict{Action: Take, Step: 3, Done: 2, UID: "uid-1"}},
		{name: "(7) a halt in status holds any new run, also after a supersession",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutSuperseded, Step: 1, Halt: &v1alpha1.RolloutHalt{Step: 1, Message: "gate failed"}}),
				Newest: "new", Pools: twenty, Done: -1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutHalted, Message: "gate failed", UID: "uid-1"}},
		{name: "a halt v0.1.0 wrote (phase only) holds too",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 1, Message: "old halt"}), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutHalted, Message: "old halt", UID: "uid-1"}},
		{name: "(6) a resume request answered once clears the halt and retakes the step",
			facts: Facts{Config: rolling(halted, resumeAnnotation("r2")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Take, Step: 1, UID: "uid-1", Resume: "r2", ClearHalt: true}},
		{name: "(6) the same request again changes nothing",
			facts: Facts{Config: rolling(halted, resumeAnnotation("r1")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutHalted, Message: "gate failed", UID: "uid-1"}},
		{name: "(6) the deprecated toggle: paused seen true while halted is recorded",
			facts: Facts{Config: rolling(halted, paused), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutHalted, Message: "gate failed", UID: "uid-1", PausedSeen: true}},
		{name: "(6) the deprecated toggle: paused false once seen true resumes",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 1, Halt: &v1alpha1.RolloutHalt{Step: 1, PausedSeen: true}}),
				Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want: Verdict{Action: Take, Step: 1, UID: "uid-1", ClearHalt: true}},
		{name: "(6) only the final generation seen: another edit does not resume a halt",
			facts: Facts{Config: rolling(halted, func(c *v1alpha1.SandboxConfig) { c.Generation = 3 }), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutHalted, Message: "gate failed", UID: "uid-1"}},
		{name: "(7) a pause signal kept in status holds a new run",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, Step: 2, SignalPaused: true}), Newest: "new", Pools: twenty, Done: -1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Done: 1, UID: "uid-1",
				Message: "paused by a pause request or signal: no more pools move until resumed (`kubectl ate rollout resume new`, a new value of the annotation sandboxconfig.ate.dev/rollout-resume)"}},
		{name: "a resume request also lifts a pause signal",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, Step: 2, SignalPaused: true}, resumeAnnotation("x")), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Resume: "x"}},
		{name: "spec.rollout.paused holds, whatever a resume request says",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2}, paused, resumeAnnotation("x")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Message: "paused: no more pools move until spec.rollout.paused is false", Done: 2, UID: "uid-1", Resume: "x"}},
		{name: "a resume signal from the CLI lifts spec.rollout.paused at its generation",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, SignalResumedGeneration: 1}, paused), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 1, UID: "uid-1"}},
		{name: "and the spec's pause holds again once the spec changed",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, SignalResumedGeneration: 1}, paused, func(c *v1alpha1.SandboxConfig) { c.Generation = 2 }),
				Newest: "new", Pools: twenty, Done: -1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Message: "paused: no more pools move until spec.rollout.paused is false", UID: "uid-1"}},
		{name: "(9) steps cut to [1, 10%] after step 2: holds, moves nothing more",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2}, func(c *v1alpha1.SandboxConfig) {
				c.Spec.Rollout.Steps = c.Spec.Rollout.Steps[:2]
			}), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Done: 2, UID: "uid-1",
				Message: "holding after its last step (2): its steps admit 2 of 20 pools; add a step to go on"}},
		{name: "(9) and extended again: the next step",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, Step: 2}), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want:  Verdict{Action: Take, Step: 3, Done: 2, UID: "uid-1"}},
		{name: "every step done, the last at 100%: complete",
			facts: Facts{Config: rolling(all(4)), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 4},
			want:  Verdict{Action: Complete, Phase: v1alpha1.RolloutCompleted, Message: "all 4 steps done", Done: 4, UID: "uid-1"}},
		{name: "(9) steps cut to [1, 100%] while step 3 ran: the 100% step is taken, nothing completes at once",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 3, AdmittedCanaries: []string{"ns/p07"},
				AdmittedThrough: &v1alpha1.RolloutPoolRef{Namespace: "ns", Name: "p09"}}, func(c *v1alpha1.SandboxConfig) {
				c.Spec.Rollout.Steps = []v1alpha1.RolloutStep{c.Spec.Rollout.Steps[0], c.Spec.Rollout.Steps[3]}
			}), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want: Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1"}},
		{name: "a pool created after the last step admitted: the last step again",
			facts: Facts{Config: rolling(all(4)), Newest: "new", Pools: append(slices.Clone(twenty), Pool{Key: PoolKey{Namespace: "zz", Name: "late"}}), Bound: "uid-1", Done: 4},
			want:  Verdict{Action: Take, Step: 4, Done: 3, UID: "uid-1"}},
		{name: "(5) a config created again under its name: start over",
			facts: Facts{Config: rolling(nil, func(c *v1alpha1.SandboxConfig) { c.UID = "uid-2" }), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want: Verdict{Action: StartOver, Done: 2, UID: "uid-2",
				Message: `SandboxConfig "new" was deleted and created again (uid uid-2, the rollout's was uid-1): its rollout starts over`}},
		{name: "(4) the annotation removed: stopped, and said so",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1}, func(c *v1alpha1.SandboxConfig) {
				c.Annotations[v1alpha1.ClassDefaultAnnotation] = "false"
			}), Newest: "old", Pools: twenty, Bound: "uid-1", Done: 0},
			want: Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Write: true, UID: "uid-1",
				Message: `SandboxConfig "new" is no longer annotated sandboxconfig.ate.dev/is-class-default: "true"; its pools follow the class default again`}},
		{name: "(4) deleted: stopped",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1}, func(c *v1alpha1.SandboxConfig) {
				c.DeletionTimestamp = &now
			}), Newest: "old", Pools: twenty, Bound: "uid-1", Done: 0},
			want: Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Write: true, UID: "uid-1", Message: `SandboxConfig "new" is being deleted`}},
		{name: "(4) spec.rollout removed: stopped",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1}, func(c *v1alpha1.SandboxConfig) { c.Spec.Rollout = nil }),
				Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Write: true, Done: 1, UID: "uid-1",
				Message: "spec.rollout was removed: every unpinned pool of the class follows the config at once"}},
		{name: "a newer default: superseded",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1}), Newest: "newer", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: End, Phase: v1alpha1.RolloutSuperseded, Write: true, Done: 1, UID: "uid-1",
				Message: `superseded by SandboxConfig "newer", a newer default of sandbox class "gvisor"`}},
		{name: "(10) a run for a config that never rolled out writes nothing",
			facts: Facts{Config: rolling(nil, func(c *v1alpha1.SandboxConfig) { c.Annotations[v1alpha1.ClassDefaultAnnotation] = "false" }), Newest: "old", Pools: twenty, Done: -1},
			want: Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Done: -1, UID: "uid-1",
				Message: `SandboxConfig "new" is no longer annotated sandboxconfig.ate.dev/is-class-default: "true"; its pools follow the class default again`}},
		{name: "completed is final",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutCompleted, Step: 4, Message: "all 4 steps done"}), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: End, Phase: v1alpha1.RolloutCompleted, Message: "all 4 steps done", Done: -1, UID: "uid-1"}},
		// Issue 46: requests by annotation, each acted on once.
		{name: "a pause request holds and is answered",
			facts: Facts{Config: rolling(all(2), annotate(v1alpha1.RolloutPauseAnnotation, "t1")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Done: 1, UID: "uid-1", Answered: Requests{Pause: "t1"}, SignalPaused: true,
				Message: "paused by a pause request or signal: no more pools move until resumed (`kubectl ate rollout resume new`, a new value of the annotation sandboxconfig.ate.dev/rollout-resume)"}},
		{name: "a pause and a later resume both new: the resume wins",
			facts: Facts{Config: rolling(all(2), annotate(v1alpha1.RolloutPauseAnnotation, "t1"), annotate(v1alpha1.RolloutResumeAnnotation, "t2")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Resume: "t2", Answered: Requests{Pause: "t1"}}},
		{name: "a resume and a later pause both new: the pause wins",
			facts: Facts{Config: rolling(all(2), annotate(v1alpha1.RolloutPauseAnnotation, "t3"), annotate(v1alpha1.RolloutResumeAnnotation, "t2")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Done: 1, UID: "uid-1", Resume: "t2", Answered: Requests{Pause: "t3"}, SignalPaused: true,
				Message: "paused by a pause request or signal: no more pools move until resumed (`kubectl ate rollout resume new`, a new value of the annotation sandboxconfig.ate.dev/rollout-resume)"}},
		{name: "a promote lets the step being worked on go: its approval and bake",
			facts: Facts{Config: rolling(all(2), annotate(v1alpha1.RolloutPromoteAnnotation, "t1")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Answered: Requests{Promote: "t1"}, PromotedStep: 2, Promoted: 2}},
		{name: "a promote answered before is remembered, not made again",
			facts: Facts{Config: rolling(func() *v1alpha1.RolloutStatus { st := all(2); st.PromoteRequest, st.PromotedStep = "t1", 2; return st }(), annotate(v1alpha1.RolloutPromoteAnnotation, "t1")),
				Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Promoted: 2}},
		{name: "a promote --full takes the last step at once",
			facts: Facts{Config: rolling(all(1), annotate(v1alpha1.RolloutPromoteFullAnnotation, "t1")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Take, Step: 4, Done: 0, UID: "uid-1", Answered: Requests{PromoteFull: "t1"}, Full: true}},
		{name: "promoted fully, steps ending below 100% complete anyway once every pool is admitted",
			facts: Facts{Config: rolling(func() *v1alpha1.RolloutStatus { st := all(2); st.PromotedFull = true; return st }(),
				func(c *v1alpha1.SandboxConfig) { c.Spec.Rollout.Steps = c.Spec.Rollout.Steps[:2] }), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2},
			want: Verdict{Action: Complete, Phase: v1alpha1.RolloutCompleted, Message: "all 2 steps done", Done: 2, UID: "uid-1", Full: true}},
		{name: "an abort holds Aborted at the step being worked on",
			facts: Facts{Config: rolling(all(2), annotate(v1alpha1.RolloutAbortAnnotation, "t1")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutAborted, Message: abortMessage(2), Done: 1, UID: "uid-1",
				Answered: Requests{Abort: "t1"}, Abort: &v1alpha1.RolloutHalt{Step: 2, Message: abortMessage(2)}}},
		{name: "an aborted rollout holds whatever else is asked, a resume included",
			facts: Facts{Config: rolling(aborted(), annotate(v1alpha1.RolloutResumeAnnotation, "t5")), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutAborted, Message: abortMessage(2), Done: 1, UID: "uid-1", Resume: "t5"}},
		{name: "a retry lifts the abort and takes its step again",
			facts: Facts{Config: rolling(aborted(), annotate(v1alpha1.RolloutRetryAnnotation, "t2")), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Answered: Requests{Retry: "t2"}, ClearAbort: true}},
		{name: "a retry lifts a halt",
			facts: Facts{Config: rolling(halted, annotate(v1alpha1.RolloutRetryAnnotation, "t2")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want:  Verdict{Action: Take, Step: 1, UID: "uid-1", Answered: Requests{Retry: "t2"}, ClearHalt: true}},
		{name: "a rollback holds RolledBack, whatever a resume asks",
			facts: Facts{Config: rolling(rolledBack(1), annotate(v1alpha1.RolloutResumeAnnotation, "t5")), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutRolledBack, Message: "step 2: metric errors 0.3 above its max 0.1", Done: 1, UID: "uid-1", Resume: "t5"}},
		{name: "a retry lifts a rollback and takes its step again",
			facts: Facts{Config: rolling(rolledBack(1), annotate(v1alpha1.RolloutRetryAnnotation, "t2")), Newest: "new", Pools: twenty, Done: -1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", Answered: Requests{Retry: "t2"}, ClearAbort: true}},
		{name: "a new spec lifts a rollback and takes its step again",
			facts: Facts{Config: rolling(rolledBack(1), func(c *v1alpha1.SandboxConfig) { c.Generation = 2 }), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want:  Verdict{Action: Take, Step: 2, Done: 1, UID: "uid-1", ClearAbort: true}},
		{name: "an abort request's abort is not lifted by a new spec",
			facts: Facts{Config: rolling(aborted(), func(c *v1alpha1.SandboxConfig) { c.Generation = 2 }), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 1},
			want:  Verdict{Action: Hold, Phase: v1alpha1.RolloutAborted, Message: abortMessage(2), Done: 1, UID: "uid-1"}},
		{name: "an abort made after a retry (the greater value) aborts",
			facts: Facts{Config: rolling(halted, annotate(v1alpha1.RolloutRetryAnnotation, "t2"), annotate(v1alpha1.RolloutAbortAnnotation, "t3")), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutAborted, Message: abortMessage(1), UID: "uid-1", ClearHalt: true,
				Answered: Requests{Retry: "t2", Abort: "t3"}, Abort: &v1alpha1.RolloutHalt{Step: 1, Message: abortMessage(1)}}},
		{name: "gone: end, nothing to write",
			facts: Facts{Bound: "uid-1", Done: 1},
			want:  Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Message: "the SandboxConfig is gone", Done: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Decide(tc.facts))
		})
	}
}

// TestAdmissionOverTime walks the admission of the canary case over
// steps: (8) the canary label removed before the canary moved keeps it
// admitted (step 1 has a pool to wait for, step 2 admits 10% after it), and
// a label added mid-rollout admits nothing until the next step.
func TestAdmissionOverTime(t *testing.T) {
	ps := pools(20, nil, 7)
	Sort(ps)
	step1, n := Advance(ps, "new", 1, &Admission{})
	require.Equal(t, 1, n)
	require.Equal(t, []string{"ns/p07"}, Between(ps, "new", &Admission{}, step1), "step 1: the canary")

	// The label is removed before the canary moved.
	ps = pools(20, nil)
	Sort(ps)
	require.True(t, step1.Admits(PoolKey{Namespace: "ns", Name: "p07"}, "old", "new"), "the canary stays admitted without its label")
	step2, n := Advance(ps, "new", 2, step1)
	require.Equal(t, 2, n, "step 2 (10%% of 20) admits one more, not a jump")
	require.Equal(t, []string{"ns/p00"}, Between(ps, "new", step1, step2))

	// A label added mid-rollout: nothing at once; first at the next step.
	ps = pools(20, nil, 15)
	Sort(ps)
	require.False(t, step2.Admits(PoolKey{Namespace: "ns", Name: "p15", Canary: true}, "old", "new"), "not admitted at once")
	step3, _ := Advance(ps, "new", 3, step2)
	require.Equal(t, []string{"ns/p15"}, Between(ps, "new", step2, step3), "the next step takes it first")

	// (2) the step's pools are the same when the step is taken again: from
	// the mark recorded before it, not from where the admission stands.
	mark := step2.Mark()
	again, _ := Advance(ps, "new", 3, step3)
	require.Equal(t, []string{"ns/p15"}, Between(ps, "new", step3.AtMark(mark), again), "a retaken step's gate gets its pools")
	require.Equal(t, []string{}, Between(ps, "new", step3, again), "not the empty delta")
}

func annotate(key, value string) func(*v1alpha1.SandboxConfig) {
	return func(c *v1alpha1.SandboxConfig) { c.Annotations[key] = value }
}

func abortMessage(step int32) string {
	return fmt.Sprintf("aborted at step %d: every pool it admitted goes back to the config it came from; take the step again with `kubectl ate rollout retry new` (a new value of the annotation sandboxconfig.ate.dev/rollout-retry)", step)
}

// rolledBack is a rollout that rolled back at step 2 with the config at
// generation gen.
func rolledBack(gen int64) *v1alpha1.RolloutStatus {
	st := all(2)
	st.Phase, st.Abort = v1alpha1.RolloutRolledBack, &v1alpha1.RolloutHalt{Step: 2, Message: "step 2: metric errors 0.3 above its max 0.1", RolledBack: true, Generation: gen}
	return st
}

// aborted is a rollout aborted at step 2 by the request "t1".
func aborted() *v1alpha1.RolloutStatus {
	st := all(2)
	st.Phase, st.AbortRequest, st.Abort = v1alpha1.RolloutAborted, "t1", &v1alpha1.RolloutHalt{Step: 2, Message: abortMessage(2)}
	return st
}

func TestDecideBindsTheFirstLook(t *testing.T) {
	v := Decide(Facts{Config: rolling(nil), Newest: "new", Done: -1})
	require.Equal(t, types.UID("uid-1"), v.UID)
}
