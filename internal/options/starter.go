package options

import (
	"errors"
	"flag"
)

// StarterOptions tunes the starter binary. Like Options, every flag
// defaults from an environment variable, then from a built-in default.
type StarterOptions struct {
	// StartConcurrency is how many pools (and, apart, how many configs'
	// releases and rollouts) the starter looks at and starts or signals
	// workflows for at once: each controller's MaxConcurrentReconciles.
	StartConcurrency int

	// envErr is an environment variable that is not a number, reported by
	// Validate (BindFlags cannot fail).
	envErr error
}

// DefaultStartConcurrency: the wave is bound by CPU, so more starts at
// once move the queue into Temporal's task queue rather than cut the time
// (16 was within the noise of 8, with three times the backlog:
// docs/decisions/0016-temporal-transport.md).
const DefaultStartConcurrency = 8

var starterSettings = []intSetting[StarterOptions]{
	{"start-concurrency", "ATE_START_CONCURRENCY", DefaultStartConcurrency, 1,
		"pools the starter plans and starts (or signals) a switch for at once, and apart configs it starts or signals a release or rollout for at once",
		func(o *StarterOptions) *int { return &o.StartConcurrency }},
}

// DefaultStarterOptions returns the built-in defaults, as a starter started
// with no flag and no environment runs.
func DefaultStarterOptions() StarterOptions {
	var o StarterOptions
	for _, s := range starterSettings {
		*s.dst(&o) = s.def
	}
	return o
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable, then from its built-in default.
func (o *StarterOptions) BindFlags(fs *flag.FlagSet) {
	o.envErr = bindInts(fs, o, starterSettings)
}

// Validate checks the settings.
func (o *StarterOptions) Validate() error {
	return errors.Join(append([]error{o.envErr}, validateInts(o, starterSettings)...)...)
}
