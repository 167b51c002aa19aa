// Package poolstatus computes the conditions of a WorkerPool's status: the
// per-class Resolved condition, the top-level SandboxConfigResolved that
// summarises them, and sets the pool's other top-level conditions.
package poolstatus

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// SummaryResolvedMessage is the top-level message when every class resolved.
const SummaryResolvedMessage = "every sandbox class resolved to a SandboxConfig"

// ClassCondition is the Resolved condition of one class.
func ClassCondition(resolved bool, reason, message string, generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if resolved {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type:               v1alpha1.ConditionResolved,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
	}
}

// Summary is the top-level SandboxConfigResolved condition at generation:
// True only when every class of the spec runs what the spec asks and
// resolved at this generation, so `kubectl wait
// --for=condition=SandboxConfigResolved` returns only once the pool runs
// what its spec asks. Per class, in spec order:
//
//   - a SwitchStepFailing condition (a step of its switch keeps failing,
//     such as a new default's finalizer patch refused by an admission
//     policy): False, SwitchStepFailing, naming the move as far as the
//     status knows it and the step's error; the class waits for a move it
//     cannot make, whatever its Resolved condition says of its config;
//   - no Resolved condition yet: Unknown, Pending;
//   - a claim (pendingConfigRef): Unknown, Switching, naming the move;
//   - a pin to a config the status does not name: Unknown, Switching, unless
//     the class's condition is False at this generation (the pin cannot be
//     met, or its switch rolled back: that failure is the word);
//   - a condition that is not True: False with its reason;
//   - a True condition written for an earlier generation (a switch that
//     planned before the spec changed): Unknown, Pending.
//
// It reads the spec and status only, never the configs: every status write
// (the pool keeper's and each switch step's) computes the same answer, so a
// class default's wave costs no write of its own (the claim's write says
// Switching, the confirm's says True).
func Summary(spec []v1alpha1.WorkerPoolSandboxClass, classes []v1alpha1.WorkerPoolSandboxClassStatus, generation int64) metav1.Condition {
	summary := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionSandboxConfigResolved, Status: status,
			Reason: reason, Message: message, ObservedGeneration: generation}
	}
	for _, entry := range spec {
		var st *v1alpha1.WorkerPoolSandboxClassStatus
		for i := range classes {
			if classes[i].Name == entry.Name {
				st = &classes[i]
			}
		}
		var c, failing *metav1.Condition
		if st != nil {
			c = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
			failing = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing)
		}
		switch {
		case failing != nil && failing.Status == metav1.ConditionTrue:
			return summary(metav1.ConditionFalse, v1alpha1.ReasonSwitchStepFailing,
				failingMessage(entry, st, failing.Message))
		case c == nil && (st == nil || st.PendingConfigRef == nil):
			return summary(metav1.ConditionUnknown, v1alpha1.ReasonPending,
				fmt.Sprintf("sandbox class %q has not been resolved yet", entry.Name))
		case st.PendingConfigRef != nil:
			return summary(metav1.ConditionUnknown, v1alpha1.ReasonSwitching,
				switchingMessage(entry.Name, st.ConfigRef.NameOf(), st.PendingConfigRef.Name))
		case entry.ConfigRef != nil && entry.ConfigRef.Name != st.ConfigRef.NameOf() &&
			!(c.Status == metav1.ConditionFalse && c.ObservedGeneration >= generation):
			return summary(metav1.ConditionUnknown, v1alpha1.ReasonSwitching,
				switchingMessage(entry.Name, st.ConfigRef.NameOf(), entry.ConfigRef.Name))
		case c.Status != metav1.ConditionTrue:
			return summary(metav1.ConditionFalse, c.Reason, fmt.Sprintf("sandbox class %q: %s", entry.Name, c.Message))
		case c.ObservedGeneration < generation:
			return summary(metav1.ConditionUnknown, v1alpha1.ReasonPending,
				fmt.Sprintf("sandbox class %q has not been resolved for generation %d yet", entry.Name, generation))
		}
	}
	return summary(metav1.ConditionTrue, v1alpha1.ReasonResolved, SummaryResolvedMessage)
}

// failingMessage names the move a failing step is part of: the config the
// class keeps, and the target when the status knows it (its claim, or the
// config its spec pins); a new class default's is known only to the
// switch, and the step's error names it.
func failingMessage(entry v1alpha1.WorkerPoolSandboxClass, st *v1alpha1.WorkerPoolSandboxClassStatus, step string) string {
	move := fmt.Sprintf("the switch of sandbox class %q", entry.Name)
	if from := st.ConfigRef.NameOf(); from != "" {
		move += fmt.Sprintf(" from %q", from)
	}
	to := st.PendingConfigRef.NameOf()
	if to == "" && entry.ConfigRef.NameOf() != st.ConfigRef.NameOf() {
		to = entry.ConfigRef.NameOf()
	}
	if to != "" {
		move += fmt.Sprintf(" to %q", to)
	}
	return move + " is failing: " + step
}

func switchingMessage(class v1alpha1.SandboxClass, from, to string) string {
	if from == "" {
		return fmt.Sprintf("sandbox class %q is switching to %q", class, to)
	}
	return fmt.Sprintf("sandbox class %q is switching from %q to %q", class, from, to)
}

// SetClassCondition sets the Resolved condition of a class's status entry,
// creating the entry if needed, and reports whether anything changed.
func SetClassCondition(status *v1alpha1.WorkerPoolStatus, class v1alpha1.SandboxClass, c metav1.Condition) bool {
	return setCondition(&EnsureClass(status, class).Conditions, c)
}

// SetPoolCondition sets a condition of the pool's own status.conditions
// (such as DeploymentApplied) and reports whether anything changed.
func SetPoolCondition(status *v1alpha1.WorkerPoolStatus, c metav1.Condition) bool {
	return setCondition(&status.Conditions, c)
}

// setCondition sets c in conditions.
//
// A transition's lastTransitionTime is always a later second than the one
// before it, even when the condition flaps within a second: the time names
// the appearance of a failure, which its Warning is keyed by (see
// events.FailureWarning and the pool keeper's Deployment warnings), and
// the API server keeps whole seconds.
//
// For a condition whose failures are reported by a Warning (see
// warnsOnFailure), a False condition whose reason or message changes is a
// transition too, as Cluster API's conditions count one: the time then
// names the failure as it reads now, so a failure that changes and changes
// back (pinned to a missing x, then y, then x again) is a new Warning each
// time, while the same failure seen again keeps its time and its Warning.
func setCondition(conditions *[]metav1.Condition, c metav1.Condition) bool {
	old := meta.FindStatusCondition(*conditions, c.Type)
	if c.LastTransitionTime.IsZero() && (old == nil || old.Status != c.Status || failureChanged(old, c)) {
		at := now().Truncate(time.Second)
		if old != nil {
			if next := old.LastTransitionTime.Add(time.Second).Truncate(time.Second); at.Before(next) {
				at = next
			}
		}
		c.LastTransitionTime = metav1.NewTime(at)
		if old != nil && old.Status == c.Status {
			// meta.SetStatusCondition moves the time only with the status.
			old.LastTransitionTime = c.LastTransitionTime
		}
	}
	return meta.SetStatusCondition(conditions, c)
}

// failureChanged reports whether c, False like old, reports another failure
// than old does, on a condition whose failures are Warnings.
func failureChanged(old *metav1.Condition, c metav1.Condition) bool {
	return warnsOnFailure(c.Type) && c.Status == metav1.ConditionFalse && old.Status == metav1.ConditionFalse &&
		(old.Reason != c.Reason || old.Message != c.Message)
}

// warnsOnFailure reports whether a False condition of this type is reported
// by a Warning keyed by its lastTransitionTime: the class's Resolved, the
// pool's DeploymentApplied. Available mirrors the Deployment's and its
// message counts ready workers: its time stays the status's.
func warnsOnFailure(conditionType string) bool {
	return conditionType == v1alpha1.ConditionResolved || conditionType == v1alpha1.ConditionDeploymentApplied
}

// now is the clock of transitions; tests set it.
var now = time.Now

// EnsureClass returns the status entry of a class, appending it if missing.
func EnsureClass(status *v1alpha1.WorkerPoolStatus, class v1alpha1.SandboxClass) *v1alpha1.WorkerPoolSandboxClassStatus {
	if e := status.ClassStatus(class); e != nil {
		return e
	}
	status.SandboxClasses = append(status.SandboxClasses, v1alpha1.WorkerPoolSandboxClassStatus{Name: class})
	return &status.SandboxClasses[len(status.SandboxClasses)-1]
}

// SetSummary recomputes the top-level condition and reports whether it changed.
func SetSummary(pool *v1alpha1.WorkerPool) bool {
	return meta.SetStatusCondition(&pool.Status.Conditions,
		Summary(pool.Spec.SandboxClasses, pool.Status.SandboxClasses, pool.Generation))
}

// SameCondition reports whether a condition already says what c says, so a
// pass can skip a write that would change nothing.
func SameCondition(conditions []metav1.Condition, c metav1.Condition) bool {
	old := meta.FindStatusCondition(conditions, c.Type)
	return old != nil && old.Status == c.Status && old.Reason == c.Reason &&
		old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration
}
