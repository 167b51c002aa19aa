package rollout

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Liveness is the one rule of whether a config's rollout is still its to
// run: "" when it is; otherwise the phase it ends with, and why. The
// rollout workflow, the starter (whether to start or wake one) and the
// preview (whether the config is its class's rolling default) all ask it.
// newest is the newest class default of the config's class.
func Liveness(c *v1alpha1.SandboxConfig, newest string) (v1alpha1.RolloutPhase, string) {
	switch {
	case c.IsDeleting():
		return v1alpha1.RolloutStopped, fmt.Sprintf("SandboxConfig %q is being deleted", c.Name)
	case !c.IsClassDefault():
		return v1alpha1.RolloutStopped, fmt.Sprintf("SandboxConfig %q is no longer annotated %s: \"true\"; its pools follow the class default again", c.Name, v1alpha1.ClassDefaultAnnotation)
	case c.Spec.Rollout == nil:
		return v1alpha1.RolloutStopped, "spec.rollout was removed: every unpinned pool of the class follows the config at once"
	case c.Status.Rollout != nil && c.Status.Rollout.Phase == v1alpha1.RolloutCompleted:
		return v1alpha1.RolloutCompleted, c.Status.Rollout.Message
	case newest != c.Name:
		return v1alpha1.RolloutSuperseded, fmt.Sprintf("superseded by SandboxConfig %q, a newer default of sandbox class %q", newest, c.Class())
	}
	return "", ""
}

// Action is what a verdict asks of the rollout workflow.
type Action string

const (
	// Take the verdict's Step: admit its pools, wait for them, run the
	// gate, bake.
	Take Action = "Take"
	// Hold where it is (Paused or Halted) until something changes.
	Hold Action = "Hold"
	// Complete the rollout: write Completed and end.
	Complete Action = "Complete"
	// End the rollout with Phase (Stopped, Superseded, or Completed
	// already written); Write says whether to write it.
	End Action = "End"
	// StartOver: the config was deleted and created again under its name:
	// the run ends and a new one, bound to the new incarnation, begins.
	StartOver Action = "StartOver"
)

// Facts are what the planner decides on: the config as read now (nil when
// gone), the newest default of its class, the class's unpinned pools, and
// what the run asking knows (the incarnation it is bound to, the steps it
// has done; Done < 0 on a run's first look).
type Facts struct {
	Config *v1alpha1.SandboxConfig
	Newest string
	Pools  []Pool
	Bound  types.UID
	Done   int32
	// Cluster is the cluster the rollout runs in; After, what the look read
	// of the rollouts of spec.rollout.after's clusters (only while the
	// first step waits: AwaitsClusters), at Now.
	Cluster string
	After   []ClusterRollout
	Now     time.Time
}

// Verdict is the planner's answer.
type Verdict struct {
	Action  Action                `json:"action"`
	Phase   v1alpha1.RolloutPhase `json:"phase,omitempty"`
	Message string                `json:"message,omitempty"`
	// Write: an End whose phase is to be written to status.
	Write bool `json:"write,omitempty"`
	// Step is the step to take (Take); Done the steps the run has done,
	// as the planner counts them (a first look takes it from status).
	Step int32 `json:"step,omitempty"`
	Done int32 `json:"done"`
	// UID is the incarnation the run is (now) bound to.
	UID types.UID `json:"uid,omitempty"`
	// Requests to record in status before acting: a resume request
	// answered (its annotation's value), a halt cleared, the pause of a
	// halted rollout seen (the deprecated toggle's first half).
	Resume     string `json:"resume,omitempty"`
	ClearHalt  bool   `json:"clearHalt,omitempty"`
	PausedSeen bool   `json:"pausedSeen,omitempty"`

	// Answered are the other requests this look answers (Resume above is
	// the resume's), recorded in status with what they did, in one write:
	// SignalPaused, the pause a pause or resume request leaves; Abort, an
	// abort made now; ClearAbort, an abort lifted by a retry; PromotedStep,
	// the step a promote let go (0: none now).
	Answered     Requests              `json:"answered,omitempty"`
	SignalPaused bool                  `json:"signalPaused,omitempty"`
	Abort        *v1alpha1.RolloutHalt `json:"abort,omitempty"`
	ClearAbort   bool                  `json:"clearAbort,omitempty"`
	PromotedStep int32                 `json:"promotedStep,omitempty"`
	// Promoted and Full are what every promote so far lets go, this one's
	// included: a step up to Promoted, and with Full every step, waits
	// for no approval and no bake, and Full takes the last step at once
	// with every pool.
	Promoted int32 `json:"promoted,omitempty"`
	Full     bool  `json:"full,omitempty"`

	// Awaiting, with a Hold on AwaitingClusters, are the clusters of
	// spec.rollout.after the first step waits for, each with why; ReadyAt,
	// once each of them completed, is when after.bake ends.
	Awaiting []v1alpha1.RolloutAwaitedCluster `json:"awaiting,omitempty"`
	ReadyAt  *time.Time                       `json:"readyAt,omitempty"`
}

// Records reports whether the verdict asks for a status write before it is
// acted on: a request answered or a halt's state changed.
func (v Verdict) Records() bool {
	return v.Resume != "" || v.ClearHalt || v.Answered.Any() || v.ClearAbort
}

// Decide is the rollout's planner: from the facts, what the rollout does
// next. It is pure; the workflow executes its verdicts, and every rule of
// when a rollout moves, holds or ends is here or in Liveness.
func Decide(f Facts) Verdict {
	c := f.Config
	if c == nil {
		return Verdict{Action: End, Phase: v1alpha1.RolloutStopped, Message: "the SandboxConfig is gone", Done: f.Done}
	}
	if f.Bound != "" && c.UID != f.Bound {
		return Verdict{Action: StartOver, Done: f.Done, UID: c.UID,
			Message: fmt.Sprintf("SandboxConfig %q was deleted and created again (uid %s, the rollout's was %s): its rollout starts over", c.Name, c.UID, f.Bound)}
	}
	v := Verdict{UID: c.UID, Done: f.Done}
	st := v1alpha1.RolloutStatus{}
	if c.Status.Rollout != nil {
		st = *c.Status.Rollout
	}
	if phase, msg := Liveness(c, f.Newest); phase != "" {
		v.Action, v.Phase, v.Message = End, phase, msg
		// A config that never rolled out has nothing to say it stopped;
		// a completed one said so already.
		v.Write = phase != v1alpha1.RolloutCompleted && c.Status.Rollout != nil
		return v
	}
	if v.Done < 0 {
		// A new run goes on where status says the rollout stands: the
		// pools admitted stay admitted and its step is taken again.
		v.Done = 0
		if st.Step > 0 && st.Phase != v1alpha1.RolloutStopped {
			v.Done = st.Step - 1
		}
	}
	halt := st.Halt
	if halt == nil && st.Phase == v1alpha1.RolloutHalted {
		halt = &v1alpha1.RolloutHalt{Step: st.Step, Message: st.Message} // written by v0.1.0
	}
	abort, signalPaused := st.Abort, st.SignalPaused
	spec := c.Spec.Rollout
	step := max(st.Step, v.Done+1) // the step being worked on
	req := PendingRequests(c)

	// A resume lifts a halt and a pause; a pause made after it (the
	// greater value) holds again. A retry lifts a halt and an abort; an
	// abort made after it aborts again.
	if req.Resume != "" {
		v.Resume, v.ClearHalt = req.Resume, halt != nil
		halt, signalPaused = nil, false
	}
	if req.Pause != "" {
		v.Answered.Pause = req.Pause
		signalPaused = signalPaused || wins(req.Pause, req.Resume)
	}
	if req.Retry != "" {
		v.Answered.Retry = req.Retry
		v.ClearHalt, v.ClearAbort = v.ClearHalt || halt != nil, abort != nil
		halt, abort = nil, nil
	}
	if req.Abort != "" {
		v.Answered.Abort = req.Abort
		if abort == nil && wins(req.Abort, req.Retry) {
			abort = &v1alpha1.RolloutHalt{Step: step, Message: fmt.Sprintf(
				"aborted at step %d: every pool it admitted goes back to the config it came from; take the step again with `kubectl ate rollout retry %s` (a new value of the annotation %s)",
				step, c.Name, v1alpha1.RolloutRetryAnnotation)}
			v.Abort, v.ClearAbort = abort, false
		}
	}
	if req.Promote != "" {
		v.Answered.Promote, v.PromotedStep = req.Promote, step
	}
	if req.PromoteFull != "" {
		v.Answered.PromoteFull = req.PromoteFull
	}
	if req.Resume != "" || req.Pause != "" {
		v.SignalPaused = signalPaused
	}
	v.Promoted, v.Full = max(st.PromotedStep, v.PromotedStep), st.PromotedFull || req.PromoteFull != ""

	if abort != nil && abort.RolledBack && abort.Generation != 0 && abort.Generation != c.Generation {
		// A rollback lasts until a retry or a new spec: the config
		// changed since it rolled back, so its step is taken again.
		v.ClearAbort, abort = true, nil
	}
	switch {
	case abort != nil && abort.RolledBack:
		v.Action, v.Phase, v.Message = Hold, v1alpha1.RolloutRolledBack, abort.Message
		return v
	case abort != nil:
		v.Action, v.Phase, v.Message = Hold, v1alpha1.RolloutAborted, abort.Message
		return v
	case halt != nil && halt.PausedSeen && !spec.Paused:
		v.ClearHalt, halt = true, nil
	case halt != nil:
		v.Action, v.Phase, v.Message = Hold, v1alpha1.RolloutHalted, halt.Message
		v.PausedSeen = spec.Paused && !halt.PausedSeen
		return v
	}
	if int(v.Done) >= len(spec.Steps) {
		// Every step done, as the steps now read: a rollout completes only
		// once its last step admitted every pool. Steps edited mid-rollout
		// never move more pools than they say (a promote --full aside):
		// ending below 100% holds, and a last step of 100% not taken as
		// such (its earlier steps cut) is taken again, as are pools
		// created since it admitted.
		last, total := spec.Steps[len(spec.Steps)-1], len(f.Pools)
		if want := Want(last, total); want < total && !v.Full {
			v.Action, v.Phase = Hold, v1alpha1.RolloutPaused
			v.Message = fmt.Sprintf("holding after its last step (%d): its steps admit %d of %d pools; add a step to go on", len(spec.Steps), want, total)
			return v
		}
		if admitted, _ := Count(f.Pools, c.Name, AdmissionOf(c)); admitted >= total {
			v.Action, v.Phase, v.Message = Complete, v1alpha1.RolloutCompleted, fmt.Sprintf("all %d steps done", len(spec.Steps))
			return v
		}
		v.Done = int32(len(spec.Steps)) - 1
	}
	switch {
	case spec.Paused && st.SignalResumedGeneration != c.Generation:
		v.Action, v.Phase, v.Message = Hold, v1alpha1.RolloutPaused, "paused: no more pools move until spec.rollout.paused is false"
	case signalPaused:
		v.Action, v.Phase, v.Message = Hold, v1alpha1.RolloutPaused,
			fmt.Sprintf("paused by a pause request or signal: no more pools move until resumed (`kubectl ate rollout resume %s`, a new value of the annotation %s)", c.Name, v1alpha1.RolloutResumeAnnotation)
	case v.Full:
		// Every remaining step skipped: the last one, with every pool.
		v.Action, v.Step = Take, int32(len(spec.Steps))
	default:
		v.Action, v.Step = Take, v.Done+1
	}
	if held, ok := awaitClusters(f, v); ok {
		return held // spec.rollout.after: the first step waits (after.go)
	}
	return v
}
