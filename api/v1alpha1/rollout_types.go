package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CanaryLabel marks a WorkerPool that a staged rollout moves before the
// others of its class. Only the exact value "true" counts.
const CanaryLabel = "sandboxconfig.ate.dev/canary"

// SandboxConfigRollout stages the move of a class's unpinned pools to a new
// class default (docs/decisions/0013-staged-rollouts.md).
type SandboxConfigRollout struct {
	// steps are taken in order; each admits more of the class's unpinned
	// pools (canary-labelled ones first, then by namespace and name). The
	// last step should reach 100%: pools a finished rollout has not
	// admitted move then, all at once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Steps []RolloutStep `json:"steps"`

	// paused true holds the rollout where it is: no more pools are
	// admitted until it is false again. A halted rollout stays halted when
	// paused goes back to false unless a look of the rollout saw it true
	// (deprecated as the way to resume: a look can miss a quick toggle);
	// resume a halt with the annotation sandboxconfig.ate.dev/rollout-resume.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// gate, when set, is a Temporal workflow of the user's, run after each
	// step's pools moved and are Available; its failure halts the rollout.
	// +optional
	Gate *RolloutGate `json:"gate,omitempty"`

	// analysis, when set, measures each step with Prometheus queries from
	// its admission until its bake ends: more than failureLimit
	// measurements out of bounds fail the step; a step whose last
	// measurement is inconclusive (no data, a query error) does not
	// complete, and fails at the step deadline.
	// +optional
	Analysis *RolloutAnalysis `json:"analysis,omitempty"`

	// onFailure is what a failed step (its analysis, its gate, a failing
	// switch, its deadline) does: Halt (the default) holds the rollout
	// where it is; RollBack moves every admitted pool back to the config it
	// came from and holds the rollout RolledBack until a retry or a change
	// of the config's spec.
	// +optional
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`

	// after, when set, holds the first step until the SandboxConfig of the
	// same name has completed its rollout in each of the clusters listed
	// (staging before production), read through the shared Temporal
	// namespace: phase AwaitingClusters meanwhile.
	// +optional
	After *RolloutAfter `json:"after,omitempty"`
}

// RolloutStep is one wave of a staged rollout.
// +kubebuilder:validation:XValidation:rule="has(self.pools) != has(self.percent)",message="a rollout step sets exactly one of pools and percent"
type RolloutStep struct {
	// pools is an absolute number of the class's unpinned pools that are
	// on the config once the step is done.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Pools *int32 `json:"pools,omitempty"`

	// percent is a share of the class's unpinned pools (rounded up) that
	// are on the config once the step is done.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`

	// pause is the bake time after the step's pools moved and are healthy
	// (a Go duration: 30s, 10m, 1h); empty: the next step at once.
	// `kubectl ate rollout promote` ends it early.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="spec.rollout.steps[].pause must be a duration such as 30s, 10m or 1h30m"
	// +optional
	Pause *metav1.Duration `json:"pause,omitempty"`

	// approval true makes the step wait, once its pools moved and are
	// Available and its gate passed (before its bake), for a person's
	// promote: `kubectl ate rollout promote NAME`, or a new value of the
	// annotation sandboxconfig.ate.dev/rollout-promote.
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// RolloutGate is a check of the user's, run after each step. The rollout
// starts it with the worker's Temporal credentials, so it may name neither
// a workflow type of the orchestrator's own nor the orchestrator's task
// queues (docs/security.md).
// +kubebuilder:validation:XValidation:rule="!(self.workflowType in ['SandboxConfigSwitch', 'SandboxConfigRelease', 'SandboxConfigRollout', 'Operator'])",message="spec.rollout.gate.workflowType names a workflow type of the orchestrator's own (SandboxConfigSwitch, SandboxConfigRelease, SandboxConfigRollout, Operator); a gate is a workflow of yours"
// +kubebuilder:validation:XValidation:rule="!self.taskQueue.startsWith('ate-orchestrator')",message="spec.rollout.gate.taskQueue names a task queue of the orchestrator's (ate-orchestrator...); a gate runs on a task queue of your own worker"
type RolloutGate struct {
	// workflowType is the Temporal workflow type to run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	WorkflowType string `json:"workflowType"`

	// taskQueue is the Temporal task queue of the user's worker that runs it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	TaskQueue string `json:"taskQueue"`

	// timeout bounds one run of the gate (a Go duration; default 30m): a
	// gate that has not finished by then, for example one on a task queue
	// nobody polls, halts the rollout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="spec.rollout.gate.timeout must be a duration such as 30s, 10m or 1h30m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// input is free-form JSON of yours, given to the gate as its input's
	// "input", next to config, step and pools.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Input *runtime.RawExtension `json:"input,omitempty"`
}

// RolloutPhase is where a staged rollout stands.
// +kubebuilder:validation:Enum=Progressing;Paused;AwaitingApproval;AwaitingClusters;Baking;Halted;Aborted;RolledBack;Completed;Superseded;Stopped
type RolloutPhase string

const (
	// RolloutProgressing: a step's pools are moving, or being checked.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutPaused: held by spec.rollout.paused or a pause signal.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutBaking: a step is done; its bake time runs.
	RolloutBaking RolloutPhase = "Baking"
	// RolloutHalted: a step failed; nothing more moves until resumed.
	RolloutHalted RolloutPhase = "Halted"
	// RolloutAwaitingApproval: a step with approval: true moved its pools;
	// the rollout waits for a promote.
	RolloutAwaitingApproval RolloutPhase = "AwaitingApproval"
	// RolloutAwaitingClusters: spec.rollout.after holds the first step
	// until the clusters it lists have completed their rollouts of the
	// config's name (status.rollout.awaitingClusters says which have not).
	// It goes on by itself, so kstatus reads it as progressing.
	RolloutAwaitingClusters RolloutPhase = "AwaitingClusters"
	// RolloutAborted: an abort moved every admitted pool back to the
	// config it came from; nothing moves until a retry.
	RolloutAborted RolloutPhase = "Aborted"
	// RolloutRolledBack: a step failed with spec.rollout.onFailure RollBack;
	// every admitted pool moved back to the config it came from; nothing
	// moves until a retry or a change of the config's spec.
	RolloutRolledBack RolloutPhase = "RolledBack"
	// RolloutCompleted: every step done; the config is an ordinary
	// class default from now on.
	RolloutCompleted RolloutPhase = "Completed"
	// RolloutSuperseded: a newer class default took over the class; the
	// pools this rollout moved stay until the newer one admits them.
	RolloutSuperseded RolloutPhase = "Superseded"
	// RolloutStopped: the config stopped being its class default
	// (annotation removed, or deleted); a new annotation starts over.
	RolloutStopped RolloutPhase = "Stopped"
)

// SandboxConfigStatus is what the product reports about a config.
type SandboxConfigStatus struct {
	// observedGeneration is the generation whose spec the conditions
	// describe: the one a live rollout has taken in, else the config's.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Progressing and Stalled, as kstatus (Flux,
	// `helm --wait`, `kubectl wait --for=condition=Ready`) reads them: a
	// config with no live rollout, or a completed one, is Ready; a halted
	// or aborted rollout is Stalled. Their reasons come from the rollout's
	// phase (RolloutProgressing, RolloutHalted, ...).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// rollout is the state of the config's staged rollout, written by its
	// rollout workflow.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// RolloutStatus is the state of a staged rollout.
type RolloutStatus struct {
	// phase is where the rollout stands.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// step is the step being worked on, counted from 1; 0 before the first.
	// +optional
	Step int32 `json:"step,omitempty"`

	// admittedPools is how many of the class's unpinned pools the rollout
	// lets move to this config: the ones on it and those up to admittedThrough.
	// +optional
	AdmittedPools int32 `json:"admittedPools,omitempty"`

	// movedPools is how many of the class's unpinned pools are on this config.
	// +optional
	MovedPools int32 `json:"movedPools,omitempty"`

	// totalPools is how many unpinned pools the class has.
	// +optional
	TotalPools int32 `json:"totalPools,omitempty"`

	// message says what the rollout waits for, or why it halted.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// workflowID is the rollout workflow's ID, for `temporal workflow
	// describe`, signals and the Web UI.
	// +optional
	WorkflowID string `json:"workflowID,omitempty"`

	// admittedThrough is the last pool, in rollout order, the rollout
	// admitted: every unpinned pool of the class up to it (canary first,
	// then by namespace and name) may move. Absent: none beyond those
	// already on the config.
	// +optional
	AdmittedThrough *RolloutPoolRef `json:"admittedThrough,omitempty"`

	// observedGeneration is the config generation whose spec.rollout.paused
	// the workflow has taken in.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// admittedCanaries are the canary-labelled pools ("namespace/name") the
	// rollout admitted: they stay admitted whatever their labels do since.
	// With them, admittedThrough (canary false) admits every pool whose
	// namespace and name sort at or before it, whatever its labels.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	AdmittedCanaries []string `json:"admittedCanaries,omitempty"`

	// stepStart is the admission before the current step: the step's pools
	// are the ones admitted since (what its gate is given, also when the
	// step is taken again).
	// +optional
	StepStart *RolloutAdmissionMark `json:"stepStart,omitempty"`

	// halt, once a step failed, says where and why; it outlives any run of
	// the rollout and is cleared only by a resume.
	// +optional
	Halt *RolloutHalt `json:"halt,omitempty"`

	// signalPaused is true while a pause signal (from the CLI) holds the
	// rollout; a resume clears it.
	// +optional
	SignalPaused bool `json:"signalPaused,omitempty"`

	// signalResumedGeneration is the config generation at which a resume
	// signal (from the CLI) lifted spec.rollout.paused: the spec's pause
	// holds again once the spec changes.
	// +optional
	SignalResumedGeneration int64 `json:"signalResumedGeneration,omitempty"`

	// resumeRequest is the last value of the annotation
	// sandboxconfig.ate.dev/rollout-resume the rollout acted on: a new value
	// resumes it once.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ResumeRequest string `json:"resumeRequest,omitempty"`

	// pauseRequest, promoteRequest, promoteFullRequest, abortRequest and
	// retryRequest are the last values of the annotations
	// sandboxconfig.ate.dev/rollout-pause, -promote, -promote-full, -abort
	// and -retry the rollout acted on: each new value is acted on once.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PauseRequest string `json:"pauseRequest,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PromoteRequest string `json:"promoteRequest,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PromoteFullRequest string `json:"promoteFullRequest,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	AbortRequest string `json:"abortRequest,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RetryRequest string `json:"retryRequest,omitempty"`

	// promotedStep is the last step a promote let go: its approval and its
	// bake are not waited for.
	// +optional
	PromotedStep int32 `json:"promotedStep,omitempty"`

	// promotedFull is true once a promote --full skipped every remaining
	// step, approval and bake: the rollout's next step admits every pool.
	// +optional
	PromotedFull bool `json:"promotedFull,omitempty"`

	// abort, once aborted, says at which step and why: every admitted pool
	// goes back to the config it came from, and the rollout holds until a
	// retry, which takes the step again.
	// +optional
	Abort *RolloutHalt `json:"abort,omitempty"`

	// analysis is the last measurement of each metric of
	// spec.rollout.analysis in the current step.
	// +listType=map
	// +listMapKey=metric
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Analysis []RolloutMeasurement `json:"analysis,omitempty"`

	// awaitingClusters, while the phase is AwaitingClusters, are the
	// clusters of spec.rollout.after whose rollout of this config's name
	// the first step still waits for, each with why.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	AwaitingClusters []RolloutAwaitedCluster `json:"awaitingClusters,omitempty"`
}

// RolloutAdmissionMark is an admission as it stood: how many of
// admittedCanaries, and the admittedThrough of then.
type RolloutAdmissionMark struct {
	// canaries is how many of admittedCanaries were admitted.
	// +optional
	Canaries int32 `json:"canaries"`
	// through is admittedThrough as it was; absent: none.
	// +optional
	Through *RolloutPoolRef `json:"through,omitempty"`
}

// RolloutHalt is a failed step of a rollout.
type RolloutHalt struct {
	// step is the step that failed.
	// +required
	Step int32 `json:"step"`
	// message says why.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// pausedSeen is true once a look saw spec.rollout.paused true after
	// the halt: setting it back to false then resumes (the deprecated
	// toggle).
	// +optional
	PausedSeen bool `json:"pausedSeen,omitempty"`
	// rolledBack is true on an abort the rollout made itself, a failed
	// step under spec.rollout.onFailure RollBack: its phase is RolledBack.
	// +optional
	RolledBack bool `json:"rolledBack,omitempty"`
	// generation is the config's generation when it rolled back: a spec
	// of another generation takes the step again.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// RolloutPoolRef names a pool and its place in rollout order.
type RolloutPoolRef struct {
	// +required
	Namespace string `json:"namespace"`
	// +required
	Name string `json:"name"`
	// canary is true when the pool was labelled sandboxconfig.ate.dev/canary:
	// "true" when admitted: canary pools come first. Always written, so
	// that a merge patch of the status replaces it.
	// +optional
	Canary bool `json:"canary"`
}
