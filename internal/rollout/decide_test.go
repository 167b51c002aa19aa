package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestDecideAfter walks the first step of a rollout with spec.rollout.after
// through what the look reads of the other clusters' rollouts: it waits,
// saying which cluster and why, until each completed and the bake passed;
// a rollout past its first step is never held.
func TestDecideAfter(t *testing.T) {
	now := time.Date(2027, 1, 10, 12, 0, 0, 0, time.UTC)
	twenty := pools(20, nil, 7)
	after := func(bake time.Duration, clusters ...string) func(*v1alpha1.SandboxConfig) {
		return func(c *v1alpha1.SandboxConfig) {
			c.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: clusters}
			if bake > 0 {
				c.Spec.Rollout.After.Bake = &metav1.Duration{Duration: bake}
			}
		}
	}
	staging := after(0, "staging")
	running := func(cluster string, phase v1alpha1.RolloutPhase, step int32, msg string) ClusterRollout {
		return ClusterRollout{Cluster: cluster, Workflow: WorkflowRunning, Phase: phase, Step: step, Message: msg}
	}
	completed := func(cluster string, at time.Time) ClusterRollout {
		return ClusterRollout{Cluster: cluster, Workflow: WorkflowCompleted, Phase: v1alpha1.RolloutCompleted, Message: "all 3 steps done", ClosedAt: at}
	}
	waiting := func(msg string, awaiting ...v1alpha1.RolloutAwaitedCluster) Verdict {
		return Verdict{Action: Hold, Phase: v1alpha1.RolloutAwaitingClusters, UID: "uid-1", Message: msg, Awaiting: awaiting}
	}
	oneOfOne := func(why string) string {
		return `waiting before step 1 for the rollout of SandboxConfig "new" to complete in 1 of the 1 clusters of spec.rollout.after: ` + why
	}
	readyAt := now.Add(30 * time.Minute)
	for _, tc := range []struct {
		name  string
		facts Facts
		want  Verdict
	}{
		{name: "no rollout of the config in the other cluster yet: waits, naming it",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{{Cluster: "staging"}}},
			want: waiting(oneOfOne(`no rollout of SandboxConfig "new" in cluster "staging" yet`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Message: `no rollout of SandboxConfig "new" in cluster "staging" yet`})},
		{name: "in progress there: waits, saying where it stands",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{running("staging", v1alpha1.RolloutBaking, 2, "step 2 done; baking until 2027-01-10T13:00:00Z")}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" is Baking at step 2: step 2 done; baking until 2027-01-10T13:00:00Z`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Phase: "Baking",
					Message: `the rollout of SandboxConfig "new" in cluster "staging" is Baking at step 2: step 2 done; baking until 2027-01-10T13:00:00Z`})},
		{name: "halted there: waits, with the halt's why",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters}, staging), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0, Cluster: "prod", Now: now,
				After: []ClusterRollout{running("staging", v1alpha1.RolloutHalted, 1, "step 1: gate workflow CheckSandboxes failed")}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" is Halted at step 1: step 1: gate workflow CheckSandboxes failed`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Phase: "Halted",
					Message: `the rollout of SandboxConfig "new" in cluster "staging" is Halted at step 1: step 1: gate workflow CheckSandboxes failed`})},
		{name: "rolled back there: waits",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{running("staging", v1alpha1.RolloutRolledBack, 2, "step 2: metric errors is 0.3, above its max 0.1")}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" is RolledBack at step 2: step 2: metric errors is 0.3, above its max 0.1`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Phase: "RolledBack",
					Message: `the rollout of SandboxConfig "new" in cluster "staging" is RolledBack at step 2: step 2: metric errors is 0.3, above its max 0.1`})},
		{name: "running, its plan unknown (its worker did not answer): waits",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{{Cluster: "staging", Workflow: WorkflowRunning, Message: "its worker did not answer the plan query"}}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" is running; where it stands is not known: its worker did not answer the plan query`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging",
					Message: `the rollout of SandboxConfig "new" in cluster "staging" is running; where it stands is not known: its worker did not answer the plan query`})},
		{name: "ended Stopped there, without completing: waits",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{{Cluster: "staging", Workflow: WorkflowCompleted, Phase: v1alpha1.RolloutStopped, Message: "spec.rollout was removed", ClosedAt: now.Add(-time.Hour)}}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" ended Stopped at 2027-01-10T11:00:00Z, without completing: spec.rollout was removed`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Phase: "Stopped",
					Message: `the rollout of SandboxConfig "new" in cluster "staging" ended Stopped at 2027-01-10T11:00:00Z, without completing: spec.rollout was removed`})},
		{name: "its workflow terminated there: waits",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{{Cluster: "staging", Workflow: "Terminated", ClosedAt: now.Add(-time.Hour)}}},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging": its workflow's latest run ended Terminated at 2027-01-10T11:00:00Z, without completing`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging",
					Message: `the rollout of SandboxConfig "new" in cluster "staging": its workflow's latest run ended Terminated at 2027-01-10T11:00:00Z, without completing`})},
		{name: "completed there, the bake not passed: waits until it ends",
			facts: Facts{Config: rolling(nil, after(time.Hour, "staging")), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-30*time.Minute))}},
			want: func() Verdict {
				v := waiting(`waiting before step 1: the rollout of SandboxConfig "new" completed in every cluster of spec.rollout.after, the last at 2027-01-10T11:30:00Z; spec.rollout.after.bake (1h0m0s) lasts until 2027-01-10T12:30:00Z`,
					v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Phase: "Completed",
						Message: `the rollout of SandboxConfig "new" in cluster "staging" completed at 2027-01-10T11:30:00Z; spec.rollout.after.bake (1h0m0s) lasts until 2027-01-10T12:30:00Z`})
				v.ReadyAt = &readyAt
				return v
			}()},
		{name: "completed there and baked: step 1",
			facts: Facts{Config: rolling(nil, after(time.Hour, "staging")), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-time.Hour))}},
			want: Verdict{Action: Take, Step: 1, UID: "uid-1"}},
		{name: "completed there, no bake: step 1",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters}, staging), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-time.Second))}},
			want: Verdict{Action: Take, Step: 1, UID: "uid-1"}},
		{name: "one of two completed: waits for the other only",
			facts: Facts{Config: rolling(nil, after(0, "staging", "canary-eu")), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-time.Hour)), running("canary-eu", v1alpha1.RolloutProgressing, 1, "")}},
			want: waiting(`waiting before step 1 for the rollout of SandboxConfig "new" to complete in 1 of the 2 clusters of spec.rollout.after: the rollout of SandboxConfig "new" in cluster "canary-eu" is Progressing at step 1`,
				v1alpha1.RolloutAwaitedCluster{Cluster: "canary-eu", Phase: "Progressing", Message: `the rollout of SandboxConfig "new" in cluster "canary-eu" is Progressing at step 1`})},
		{name: "both completed, the bake counts from the last",
			facts: Facts{Config: rolling(nil, after(time.Hour, "staging", "canary-eu")), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-3*time.Hour)), completed("canary-eu", now.Add(-30*time.Minute))}},
			want: func() Verdict {
				v := waiting(`waiting before step 1: the rollout of SandboxConfig "new" completed in every cluster of spec.rollout.after, the last at 2027-01-10T11:30:00Z; spec.rollout.after.bake (1h0m0s) lasts until 2027-01-10T12:30:00Z`,
					v1alpha1.RolloutAwaitedCluster{Cluster: "canary-eu", Phase: "Completed",
						Message: `the rollout of SandboxConfig "new" in cluster "canary-eu" completed at 2027-01-10T11:30:00Z; spec.rollout.after.bake (1h0m0s) lasts until 2027-01-10T12:30:00Z`})
				v.ReadyAt = &readyAt
				return v
			}()},
		{name: "a cluster read not at all (none of the look's): waits",
			facts: Facts{Config: rolling(nil, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now},
			want: waiting(oneOfOne(`the rollout of SandboxConfig "new" in cluster "staging" has not been read yet`),
				v1alpha1.RolloutAwaitedCluster{Cluster: "staging", Message: `the rollout of SandboxConfig "new" in cluster "staging" has not been read yet`})},
		{name: "the cluster lists itself: refused, saying so, whatever the others did",
			facts: Facts{Config: rolling(nil, after(0, "staging", "prod")), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{completed("staging", now.Add(-time.Hour))}},
			want: waiting(`refused: spec.rollout.after.clusters lists this cluster, "prod", itself: a rollout cannot wait for its own; remove it from the list`,
				v1alpha1.RolloutAwaitedCluster{Cluster: "prod", Message: `this cluster itself: a rollout cannot wait for its own; remove "prod" from spec.rollout.after.clusters`})},
		{name: "after removed mid-wait: step 1",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters,
				AwaitingClusters: []v1alpha1.RolloutAwaitedCluster{{Cluster: "staging"}}}), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 0, Cluster: "prod", Now: now},
			want: Verdict{Action: Take, Step: 1, UID: "uid-1"}},
		{name: "a rollout past step 1 is not held, whatever the other cluster does",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2}, staging), Newest: "new", Pools: twenty, Bound: "uid-1", Done: 2, Cluster: "prod", Now: now,
				After: []ClusterRollout{running("staging", v1alpha1.RolloutHalted, 1, "gate failed")}},
			want: Verdict{Action: Take, Step: 3, Done: 2, UID: "uid-1"}},
		{name: "step 1 admitted and taken again by a new run: not held",
			facts: Facts{Config: rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1}, staging), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now},
			want:  Verdict{Action: Take, Step: 1, Done: 0, UID: "uid-1"}},
		{name: "paused and waiting: the pause is what it says",
			facts: Facts{Config: rolling(nil, staging, func(c *v1alpha1.SandboxConfig) { c.Spec.Rollout.Paused = true }), Newest: "new", Pools: twenty, Done: -1, Cluster: "prod", Now: now,
				After: []ClusterRollout{{Cluster: "staging"}}},
			want: Verdict{Action: Hold, Phase: v1alpha1.RolloutPaused, Message: "paused: no more pools move until spec.rollout.paused is false", UID: "uid-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Decide(tc.facts))
		})
	}
}

func TestAwaitsClusters(t *testing.T) {
	with := func(c *v1alpha1.SandboxConfig) {
		c.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: []string{"staging"}}
	}
	require.False(t, AwaitsClusters(rolling(nil), -1), "no after: nothing to read")
	require.True(t, AwaitsClusters(rolling(nil, with), -1), "a first look of a new rollout")
	require.True(t, AwaitsClusters(rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters}, with), 0))
	require.False(t, AwaitsClusters(rolling(&v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 1}, with), -1), "step 1 admitted (and halted)")
	require.False(t, AwaitsClusters(rolling(nil, with), 1), "the run has done step 1")
}

// TestAwaitWritten: a hold on AwaitingClusters is written again only when
// the status does not say it already.
func TestAwaitWritten(t *testing.T) {
	awaiting := []v1alpha1.RolloutAwaitedCluster{{Cluster: "staging", Phase: "Baking", Message: "baking there"}}
	v := Verdict{Action: Hold, Phase: v1alpha1.RolloutAwaitingClusters, Message: "waiting", Awaiting: awaiting}
	st := v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters, Message: "waiting", AwaitingClusters: slices.Clone(awaiting)}
	require.True(t, AwaitWritten(st, v))
	st.AwaitingClusters[0].Phase = "Progressing"
	require.False(t, AwaitWritten(st, v), "another phase there")
	require.False(t, AwaitWritten(v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters, Message: "waiting"}, v), "the clusters not written")
	long := v
	long.Message = strings.Repeat("x", 2000)
	require.True(t, AwaitWritten(v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters, Message: strings.Repeat("x", 1024), AwaitingClusters: awaiting}, long),
		"a message status cut to its bound")
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
