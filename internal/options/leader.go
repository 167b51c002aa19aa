package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"ate.dev/orchestrator/internal/leader"
)

// LeaderElection is the flags of a process's leader election: the worker
// and the starter bind them next to Options, and run the leader.Election
// they set.
type LeaderElection struct {
	leader.Election

	// envErr is an environment variable that is not a duration, reported
	// by Validate (BindFlags cannot fail).
	envErr error
}

type durationSetting struct {
	flag, env string
	def       time.Duration
	usage     string
	dst       func(*leader.Election) *time.Duration
}

var leaderTimings = []durationSetting{
	{"leader-election-lease-duration", "LEADER_ELECTION_LEASE_DURATION", leader.DefaultLeaseDuration,
		"how long a leader that stopped renewing keeps the Lease: the longest a failover waits",
		func(e *leader.Election) *time.Duration { return &e.LeaseDuration }},
	{"leader-election-renew-deadline", "LEADER_ELECTION_RENEW_DEADLINE", leader.DefaultRenewDeadline,
		"how long the leader keeps trying to renew the Lease before it gives up leading and exits",
		func(e *leader.Election) *time.Duration { return &e.RenewDeadline }},
	{"leader-election-retry-period", "LEADER_ELECTION_RETRY_PERIOD", leader.DefaultRetryPeriod,
		"how often each replica tries to acquire or renew the Lease",
		func(e *leader.Election) *time.Duration { return &e.RetryPeriod }},
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable.
func (l *LeaderElection) BindFlags(fs *flag.FlagSet) {
	v := os.Getenv("LEADER_ELECT")
	fs.BoolVar(&l.Enabled, "leader-elect", v == "1" || v == "true",
		"elect a leader among replicas, so that two replicas are safe (env LEADER_ELECT)")
	fs.StringVar(&l.Namespace, "leader-election-namespace", os.Getenv("LEADER_ELECTION_NAMESPACE"),
		"namespace of the leader election Lease; defaults to the pod's namespace (env LEADER_ELECTION_NAMESPACE)")
	var errs []error
	for _, s := range leaderTimings {
		def, err := envDefault(s.env, s.def, time.ParseDuration, "a duration")
		errs = append(errs, err)
		fs.DurationVar(s.dst(&l.Election), s.flag, def, fmt.Sprintf("%s (env %s)", s.usage, s.env))
	}
	l.envErr = errors.Join(errs...)
}

// Validate checks the timings as client-go's leader elector would, so that
// a bad setting stops the process at start with the flags' names rather
// than when the manager starts electing.
func (l *LeaderElection) Validate() error {
	errs := []error{l.envErr}
	for _, s := range leaderTimings {
		if v := *s.dst(&l.Election); v < 0 {
			errs = append(errs, fmt.Errorf("--%s (%s) must not be negative, got %s", s.flag, s.env, v))
		}
	}
	lease, renew, retry := l.Timings()
	if lease <= renew {
		errs = append(errs, fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)", lease, renew))
	}
	if float64(renew) <= leader.JitterFactor*float64(retry) {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than %.1f times --leader-election-retry-period (%s)", renew, leader.JitterFactor, retry))
	}
	return errors.Join(errs...)
}
