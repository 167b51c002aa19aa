package rollout

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// MaxConditionMessage bounds a condition's message, as status.rollout.message
// is bounded: `kubectl get -o wide` and Flux show it on one line.
const MaxConditionMessage = 1024

// ConfigConditions are the kstatus conditions (Ready, Progressing, Stalled)
// of a SandboxConfig and the status.observedGeneration to write with them.
type ConfigConditions struct {
	Conditions         []metav1.Condition
	ObservedGeneration int64
}

// Conditions maps a config's rollout to the conditions kstatus reads (Flux
// health checks, `helm --wait`, `kubectl wait --for=condition=Ready`, Argo
// CD), given the newest default of its class (resolve.NewestDefault). It
// is pure: now is the lastTransitionTime of a condition whose status
// changes, and one whose status stays keeps its own (meta.SetStatusCondition),
// so a look that changes nothing returns c's conditions as they are and a
// writer can compare before it writes. Conditions of other types on c are
// kept.
//
// Whether the rollout is live is Liveness's word, as for the workflow and
// the starter, so the conditions never say a rollout runs that the workflow
// would end, nor that one ended that it still runs:
//   - not live (no spec.rollout, not or no longer the class default,
//     superseded, completed, in deletion): Ready; reason NoRollout when the
//     config never had a rollout status, else Rollout<phase Liveness ends it with>;
//   - live, not started (no status.rollout, or no phase yet, or the phase
//     of an earlier rollout that ended: a new one starts over): RolloutPending,
//     progressing;
//   - Progressing, Baking, AwaitingClusters: progressing; Paused, AwaitingApproval: waiting for
//     a person, neither progressing nor stalled; Halted, Aborted: Stalled,
//     which kstatus reads as Failed.
//
// observedGeneration is the config's generation, except for a live rollout
// with a status: the generation it has taken in (status.rollout.
// observedGeneration), so a spec edit reads InProgress to kstatus until the
// rollout acts on it.
func Conditions(c *v1alpha1.SandboxConfig, newest string, now metav1.Time) ConfigConditions {
	v := verdictOf(c, newest)
	conds := slices.Clone(c.Status.Conditions)
	for _, cond := range []struct {
		typ string
		set bool
	}{
		{v1alpha1.ConditionReady, v.ready},
		{v1alpha1.ConditionProgressing, v.progressing},
		{v1alpha1.ConditionStalled, v.stalled},
	} {
		status := metav1.ConditionFalse
		if cond.set {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conds, metav1.Condition{
			Type: cond.typ, Status: status, Reason: v.reason, Message: truncateMessage(v.message),
			ObservedGeneration: v.generation, LastTransitionTime: now,
		})
	}
	return ConfigConditions{Conditions: conds, ObservedGeneration: v.generation}
}

// conditionsVerdict is what the three conditions say; they share the reason
// and message, so each one read alone says why.
type conditionsVerdict struct {
	ready, progressing, stalled bool
	reason, message             string
	generation                  int64
}

func verdictOf(c *v1alpha1.SandboxConfig, newest string) conditionsVerdict {
	st := c.Status.Rollout
	if phase, why := Liveness(c, newest); phase != "" {
		v := conditionsVerdict{ready: true, reason: v1alpha1.RolloutReason(phase), message: why, generation: c.Generation}
		if st == nil {
			// Never rolled out: Liveness's "stopped" would be news of a
			// rollout that never was.
			v.reason, v.message = v1alpha1.ReasonNoRollout, "no staged rollout of this config is live"
			if c.Spec.Rollout != nil {
				v.message += ": " + why
			}
		}
		return v
	}
	// Live: spec.rollout is set (Liveness says so), and the rollout is the
	// workflow's to run; the phase it wrote says where it stands.
	if st == nil {
		return pending(c, "the rollout has not started yet")
	}
	v := conditionsVerdict{reason: v1alpha1.RolloutReason(st.Phase), message: stepMessage(c, st), generation: c.Generation}
	if st.ObservedGeneration > 0 {
		v.generation = st.ObservedGeneration
	}
	switch st.Phase {
	case v1alpha1.RolloutProgressing, v1alpha1.RolloutBaking:
		v.progressing = true
	case v1alpha1.RolloutAwaitingClusters:
		// Waiting for other clusters' rollouts (spec.rollout.after): they go
		// on by themselves and this one follows with no one's action, so it
		// is progressing; a halt there is that cluster's Stalled, not this
		// one's (its message names it).
		v.progressing = true
	case v1alpha1.RolloutPaused, v1alpha1.RolloutAwaitingApproval:
		// Waiting for a person (a resume, a promote): not progressing, so
		// Argo CD and Flux do not wait out their timeouts on it believing
		// it moves, and not stalled, since nothing failed.
	case v1alpha1.RolloutHalted, v1alpha1.RolloutAborted, v1alpha1.RolloutRolledBack:
		v.stalled = true
	case "":
		return pending(c, "the rollout has not started yet")
	default:
		// Stopped or Superseded written by an earlier run, yet live again
		// (the annotation put back, the newer default gone): a new run
		// starts over. Completed cannot be live (Liveness ends it).
		return pending(c, fmt.Sprintf("the rollout has not started again yet (it was %s: %s)", st.Phase, st.Message))
	}
	return v
}

// pending is a live rollout whose run has not written where it stands: not
// ready, and progressing, since the starter starts its run by itself.
func pending(c *v1alpha1.SandboxConfig, message string) conditionsVerdict {
	return conditionsVerdict{progressing: true, reason: v1alpha1.ReasonRolloutPending, message: message, generation: c.Generation}
}

// stepMessage is the rollout's message with where it stands ("step 2 of 4:
// ..."), which the workflow's message does not always say.
func stepMessage(c *v1alpha1.SandboxConfig, st *v1alpha1.RolloutStatus) string {
	msg := st.Message
	if msg == "" {
		msg = "rollout " + string(st.Phase)
	}
	if st.Step > 0 && c.Spec.Rollout != nil {
		return fmt.Sprintf("step %d of %d: %s", st.Step, len(c.Spec.Rollout.Steps), msg)
	}
	return msg
}

// truncateMessage cuts s to MaxConditionMessage bytes on a rune boundary.
func truncateMessage(s string) string {
	if len(s) <= MaxConditionMessage {
		return s
	}
	n := MaxConditionMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
