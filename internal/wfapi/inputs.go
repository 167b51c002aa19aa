package wfapi

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
	// OutcomeSuperseded: a switch's claim found the class no longer
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
