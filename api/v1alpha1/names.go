package v1alpha1

// Well-known names shared by the API server, the workflows and operators.
// Their spelling is part of the API: operators type them and tooling greps for them.
const (
	// ClassDefaultAnnotation marks a SandboxConfig as a candidate for its
	// class default. Only the exact value "true" counts.
	ClassDefaultAnnotation = "sandboxconfig.ate.dev/is-class-default"

	// RolloutResumeAnnotation resumes a halted or signal-paused rollout of
	// the SandboxConfig it is set on: each new value resumes it once
	// (status.rollout.resumeRequest records the last one acted on), so a
	// request cannot be missed, unlike a quick toggle of spec.rollout.paused.
	RolloutResumeAnnotation = "sandboxconfig.ate.dev/rollout-resume"

	// The other requests to a rollout, set on its SandboxConfig (by
	// `kubectl ate rollout ...` or a Git commit), work as the resume
	// annotation does: each new value is acted on once, and
	// status.rollout.<verb>Request records the last one. When a pause and a
	// resume are both new at one look, the greater value wins (the plugin
	// writes UTC timestamps, which sort in time order).
	//
	// RolloutPauseAnnotation holds the rollout where it is until a resume.
	RolloutPauseAnnotation = "sandboxconfig.ate.dev/rollout-pause"
	// RolloutPromoteAnnotation ends the current step's approval wait and
	// bake (a step not there yet skips them when it gets there).
	RolloutPromoteAnnotation = "sandboxconfig.ate.dev/rollout-promote"
	// RolloutPromoteFullAnnotation skips every remaining step, approval
	// and bake: every unpinned pool of the class is admitted at once.
	RolloutPromoteFullAnnotation = "sandboxconfig.ate.dev/rollout-promote-full"
	// RolloutAbortAnnotation moves every pool the rollout admitted back to
	// the config it came from and holds the rollout Aborted until a retry.
	RolloutAbortAnnotation = "sandboxconfig.ate.dev/rollout-abort"
	// RolloutRetryAnnotation takes a halted, aborted or rolled-back rollout from its
	// current step again.
	RolloutRetryAnnotation = "sandboxconfig.ate.dev/rollout-retry"

	// ProtectionFinalizer is put on a SandboxConfig before any WorkerPool
	// status names it, and removed only once no WorkerPool names it.
	ProtectionFinalizer = "sandboxconfig.ate.dev/workerpool-protection"

	// WorkerPoolLabel is set on a pool's Deployment selector and pods.
	WorkerPoolLabel = "ate.dev/worker-pool"

	// SandboxClassTaintKey is the taint a pool's pods tolerate, so a cluster
	// can reserve nodes per sandbox class.
	SandboxClassTaintKey = "ate.dev/sandboxClass"

	// KVMResource is the device-plugin resource a micro-VM worker requests.
	KVMResource = "ate.dev/kvm"

	// DefaultWorkerServiceAccount is the service account of worker pods
	// when the pool's template names none.
	DefaultWorkerServiceAccount = "ateworker"
)

// Condition types.
const (
	// ConditionResolved is the per-class condition in
	// status.sandboxClasses[].conditions.
	ConditionResolved = "Resolved"

	// ConditionSandboxConfigResolved is the top-level condition that
	// summarises the per-class ones, so that
	// `kubectl wait --for=condition=SandboxConfigResolved` works.
	ConditionSandboxConfigResolved = "SandboxConfigResolved"

	// ConditionDeploymentApplied is a top-level condition this product adds
	// to the reference controller's API (which reports a failed Deployment
	// apply only in its logs): True once the pool's worker Deployment is as
	// the pool asks; False, with one of the DeploymentApplied reasons below,
	// while it cannot be built or applied. A pool that is not due a
	// Deployment yet (a class has no config) has none.
	ConditionDeploymentApplied = "DeploymentApplied"

	// ConditionAvailable is a top-level condition mirrored from the worker
	// Deployment's Available condition (its status and reason; the message
	// adds how many workers are ready): False, with reason
	// MinimumReplicasUnavailable, while fewer workers are ready than the
	// rollout budget allows (workers Pending for lack of a node of the
	// class, of an ate.dev/kvm device, or on a failed node). A pool whose
	// Deployment has no such condition yet has none.
	ConditionAvailable = "Available"
	// ReasonDeploymentAvailable is the Available reason when the
	// Deployment's condition gives none.
	ReasonDeploymentAvailable = "DeploymentAvailable"
)

// Reasons of the DeploymentApplied condition; a False one is also the reason
// of the Warning event that reports it.
const (
	// ReasonDeploymentApplied: the Deployment is as the pool asks.
	ReasonDeploymentApplied = "Applied"
	// ReasonDeploymentNotOwned: a Deployment of the pool's name exists and
	// is not controlled by the pool; it is never applied over.
	ReasonDeploymentNotOwned = "DeploymentNotOwned"
	// ReasonDeploymentApplyFailed: the API server refused the apply (an
	// admission webhook or policy, a quota, RBAC) or could not be reached.
	ReasonDeploymentApplyFailed = "DeploymentApplyFailed"
	// ReasonDeploymentInvalid: the pool's spec cannot make a Deployment (a
	// pool admitted before a validation rule that now refuses it).
	ReasonDeploymentInvalid = "DeploymentInvalid"
)

// Condition and event reasons: the reasons of a class's Resolved condition.
// A False one is also the reason of the Warning recorded on the pool once
// per appearance of the failure; SandboxConfigDeleting is also the reason
// of the Warning on a SandboxConfig in deletion whose pools wait for a
// rollout. Every reason of an event the product records is a constant of
// this file.
const (
	ReasonResolved              = "Resolved"
	ReasonSandboxConfigNotFound = "SandboxConfigNotFound"
	ReasonSandboxClassMismatch  = "SandboxClassMismatch"
	ReasonSandboxConfigDeleting = "SandboxConfigDeleting"
	ReasonDefaultConfigNotFound = "DefaultConfigNotFound"

	// ReasonSwitching is the reason of the top-level SandboxConfigResolved
	// condition, Unknown, while a class has a move to make that has not
	// been made: its spec pins a config its status does not name, or it
	// holds a claim (pendingConfigRef). The message names the class and the
	// move. The pool keeper keeps status.observedGeneration below a
	// generation whose spec asks for such a move until it is made.
	ReasonSwitching = "Switching"
	// ReasonPending is the reason of the top-level condition, Unknown, while
	// a class has no Resolved condition yet, or only one written for an
	// earlier generation of the pool.
	ReasonPending = "Pending"

	// EventReasonSandboxConfigSwitched is the reason of the Normal event
	// emitted after each change of a class's configRef.
	EventReasonSandboxConfigSwitched = "SandboxConfigSwitched"
)

// The product's own names, beside the reference controller's: the spec has
// no condition or reason for what they report.
const (
	// ConditionSwitchStepFailing is set True on a class, in
	// status.sandboxClasses[].conditions, while a step of its switch keeps
	// failing (an admission policy refusing the finalizer patch, RBAC, a
	// quota). Its reason is the step (Protect, Claim, Confirm, RollBack,
	// AbandonClaim); its message names the step and the API error. The next
	// status write of the switch, which the step's success leads to,
	// removes it, and so does the pool keeper once the class resolves to
	// the config it is on (the move is no longer wanted). While it is set,
	// the pool's SandboxConfigResolved is False (ReasonSwitchStepFailing).
	ConditionSwitchStepFailing = "SwitchStepFailing"
	// ReasonSwitchStepFailing is the reason of the top-level
	// SandboxConfigResolved condition, False, while a class shows
	// SwitchStepFailing: a move its switch cannot make (a new class default
	// whose finalizer patch an admission policy refuses). The message names
	// the class, the config it keeps and, when the status knows it, the
	// target, then the step's condition message (the API error). It turns
	// True once the move is made, or once the class no longer needs it (the
	// pool keeper then removes the class's SwitchStepFailing).
	ReasonSwitchStepFailing = "SwitchStepFailing"
	// EventReasonSwitchStepFailing is the reason of the Warning recorded once
	// per distinct error of a failing step of a switch run.
	EventReasonSwitchStepFailing = "SwitchStepFailing"
	// ReasonSandboxConfigNotProtected is the reason of a class's Resolved
	// condition False after a Confirm found its target without the
	// protection finalizer (taken off by hand, or a Confirm scheduled
	// without the switch's Protect), and of its Warning: the class keeps its
	// config, and the next switch protects the target first.
	ReasonSandboxConfigNotProtected = "SandboxConfigNotProtected"
)

// SandboxConfig conditions, as kstatus reads them (Ready, Stalled), and
// their reasons: "Rollout" and the rollout's phase, NoRollout for a config
// no rollout of which is live, RolloutPending for one whose rollout has not
// written its status yet.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionStalled     = "Stalled"

	ReasonNoRollout      = "NoRollout"
	ReasonRolloutPending = "RolloutPending"
)

// RolloutReason is the condition reason of a rollout phase: "Rollout" and
// the phase (RolloutHalted, RolloutAwaitingApproval, ...).
func RolloutReason(p RolloutPhase) string { return "Rollout" + string(p) }

// Reasons of the events recorded on a SandboxConfig about its rollout, each
// once per occurrence.
const (
	// EventReasonRolloutStepCompleted (Normal): a step's pools moved, are
	// Available and passed its gate, approval and bake.
	EventReasonRolloutStepCompleted = "RolloutStepCompleted"
	// EventReasonRolloutPaused (Normal): a pause request or signal held it.
	EventReasonRolloutPaused = "RolloutPaused"
	// EventReasonRolloutResumed (Normal): a resume or retry let it go on.
	EventReasonRolloutResumed = "RolloutResumed"
	// EventReasonRolloutPromoted (Normal): a promote ended an approval wait
	// or a bake, or a promote --full skipped the remaining steps.
	EventReasonRolloutPromoted = "RolloutPromoted"
	// EventReasonRolloutCompleted (Normal): every step done.
	EventReasonRolloutCompleted = "RolloutCompleted"
	// EventReasonRolloutHalted (Warning): a step failed.
	EventReasonRolloutHalted = "RolloutHalted"
	// EventReasonRolloutAborted (Warning): an abort moved the admitted
	// pools back.
	EventReasonRolloutAborted = "RolloutAborted"
	// EventReasonRolloutRolledBack (Warning): a step failed under
	// spec.rollout.onFailure RollBack; the admitted pools move back.
	EventReasonRolloutRolledBack = "RolloutRolledBack"
)
