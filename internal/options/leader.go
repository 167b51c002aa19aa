package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// LeaderElection makes replicas of a process safe: the starter's controllers
// and the worker's pool reconciler run on the replica that holds a Lease.
type LeaderElection struct {
	Enabled bool
	// Namespace of the Lease; the pod's namespace when empty, which
	// controller-runtime cannot guess out of a cluster.
	Namespace string
	// LeaseDuration is how long a leader that stopped renewing (killed,
	// partitioned) keeps the Lease before another replica may take it: the
	// longest a failover waits. RenewDeadline is how long the leader keeps
	// trying to renew before it gives up leading (and the process exits),
	// RetryPeriod how often every replica tries to acquire or renew. Zero
	// takes controller-runtime's default. Shorter times fail over sooner
	// and cost a Lease write per RetryPeriod; a leader starved of CPU for
	// RenewDeadline loses the lead and restarts.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// envErr is an environment variable that is not a duration, reported
	// by Validate (BindFlags cannot fail).
	envErr error
}

// Defaults of the Lease's timings: controller-runtime's own, so that a
// process started without the flags behaves as before they existed.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// jitterFactor is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed the retry period times it.
const jitterFactor = 1.2

type durationSetting struct {
	flag, env string
	def       time.Duration
	usage     string
	dst       func(*LeaderElection) *time.Duration
}

var leaderTimings = []durationSetting{
	{"leader-election-lease-duration", "LEADER_ELECTION_LEASE_DURATION", DefaultLeaseDuration,
		"how long a leader that stopped renewing keeps the Lease: the longest a failover waits",
		func(l *LeaderElection) *time.Duration { return &l.LeaseDuration }},
	{"leader-election-renew-deadline", "LEADER_ELECTION_RENEW_DEADLINE", DefaultRenewDeadline,
		"how long the leader keeps trying to renew the Lease before it gives up leading and exits",
		func(l *LeaderElection) *time.Duration { return &l.RenewDeadline }},
	{"leader-election-retry-period", "LEADER_ELECTION_RETRY_PERIOD", DefaultRetryPeriod,
		"how often each replica tries to acquire or renew the Lease",
		func(l *LeaderElection) *time.Duration { return &l.RetryPeriod }},
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
		fs.DurationVar(s.dst(l), s.flag, def, fmt.Sprintf("%s (env %s)", s.usage, s.env))
	}
	l.envErr = errors.Join(errs...)
}

// Validate checks the timings as client-go's leader elector would, so that
// a bad setting stops the process at start with the flags' names rather
// than when the manager starts electing.
func (l *LeaderElection) Validate() error {
	errs := []error{l.envErr}
	for _, s := range leaderTimings {
		if v := *s.dst(l); v < 0 {
			errs = append(errs, fmt.Errorf("--%s (%s) must not be negative, got %s", s.flag, s.env, v))
		}
	}
	lease, renew, retry := l.timings()
	if lease <= renew {
		errs = append(errs, fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)", lease, renew))
	}
	if float64(renew) <= jitterFactor*float64(retry) {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than %.1f times --leader-election-retry-period (%s)", renew, jitterFactor, retry))
	}
	return errors.Join(errs...)
}

// timings are the durations in effect, the defaults standing for zeros.
func (l *LeaderElection) timings() (lease, renew, retry time.Duration) {
	or := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return or(l.LeaseDuration, DefaultLeaseDuration), or(l.RenewDeadline, DefaultRenewDeadline), or(l.RetryPeriod, DefaultRetryPeriod)
}

// Apply sets the election on a controller-runtime manager's options; id
// names the Lease.
func (l *LeaderElection) Apply(o *ctrl.Options, id string) {
	o.LeaderElection = l.Enabled
	o.LeaderElectionID = id
	o.LeaderElectionNamespace = l.Namespace
	lease, renew, retry := l.timings()
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
}
