package v1alpha1

// Well-known names shared by the API server, the workflows and operators.
// Their spelling is part of the API: operators type them and tooling greps for them.
const (
	// ClassDefaultAnnotation marks a SandboxConfig as a candidate for its
	// class default. Only the exact value "true" counts.
	ClassDefaultAnnotation = "sandboxconfig.ate.dev/is-class-default"

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
)

// Condition and event reasons.
const (
	ReasonResolved              = "Resolved"
	ReasonSandboxConfigNotFound = "SandboxConfigNotFound"
	ReasonSandboxClassMismatch  = "SandboxClassMismatch"
	ReasonSandboxConfigDeleting = "SandboxConfigDeleting"
	ReasonDefaultConfigNotFound = "DefaultConfigNotFound"

	// EventReasonSandboxConfigSwitched is the reason of the Normal event
	// emitted after each change of a class's configRef.
	EventReasonSandboxConfigSwitched = "SandboxConfigSwitched"
)
