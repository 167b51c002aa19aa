package wfapi

// PoolInput starts (or continues) the pool workflow of one WorkerPool.
type PoolInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is carried across continue-as-new; zero on a fresh start.
	State *PoolState `json:"state,omitempty"`
}

// PoolState is the pool workflow's memory, and what the `state` query returns.
type PoolState struct {
	// UID is the incarnation of the pool the workflow last saw.
	UID string `json:"uid,omitempty"`
	// Switches counts switch workflows started for this pool; the next one
	// is numbered Switches+1.
	Switches int `json:"switches"`
	// Passes counts resolution passes.
	Passes int `json:"passes"`
	// Classes is the per-class view, in spec order.
	Classes []ClassState `json:"classes,omitempty"`
}

// ClassState is the pool workflow's view of one sandbox class.
type ClassState struct {
	Name string `json:"name"`
	// Config is the config the class's status names.
	Config string `json:"config,omitempty"`
	// Pending is a claim not yet confirmed or rolled back.
	Pending string `json:"pending,omitempty"`
	// Resolved, Reason and Message are those of the Resolved condition.
	Resolved bool   `json:"resolved"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	// LastOutcome is the outcome of the class's last switch.
	LastOutcome string `json:"lastOutcome,omitempty"`
	// Switches counts this class's switch workflows.
	Switches int `json:"switches"`
}

// ReleaseInput starts (or continues) the release workflow of a SandboxConfig.
type ReleaseInput struct {
	Config string `json:"config"`
	// Checks counts the looks taken so far, carried across continue-as-new.
	Checks int `json:"checks,omitempty"`
	// Since is when the first run started (Unix seconds), carried across
	// continue-as-new, to measure how long the config waited.
	Since int64 `json:"since,omitempty"`
}

// Outcomes of switches and releases, as shown in search attributes and the
// `state` query.
const (
	OutcomeConfirmed  = "confirmed"
	OutcomeRolledBack = "rolled back"
	OutcomePoolGone   = "pool gone"
	OutcomeReleased   = "released"
	OutcomeWaiting    = "waiting"
	OutcomeNotNeeded  = "not needed"
	// OutcomeSuperseded: a lean switch's claim found the class no longer
	// where the starter saw it (another switch moved it since): nothing was
	// written, and the starter looks again.
	OutcomeSuperseded = "superseded"
	// OutcomeUpToDate: a switch started by an operator found nothing to move.
	OutcomeUpToDate = "up to date"
)

// ReleaseState is what the `state` query of a release workflow returns.
type ReleaseState struct {
	Config string `json:"config"`
	// Checks counts the looks taken, across continue-as-new.
	Checks int `json:"checks"`
	// Outcome is the last outcome: waiting, released or not needed.
	Outcome string `json:"outcome,omitempty"`
	// UserCount is how many pools held the config at the last look, and
	// Users a sample of them (at most activities.UserSampleSize keys).
	UserCount int      `json:"userCount,omitempty"`
	Users     []string `json:"users,omitempty"`
}
