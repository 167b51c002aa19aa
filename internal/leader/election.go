// Package leader is the leader election that makes replicas of a process
// safe: the starter's controllers and the worker's pool reconciler run on
// the replica that holds a Lease. It defines no flag: internal/options
// binds them to an Election and checks them.
package leader

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Election is the leader election of a process's controller-runtime
// manager (Apply).
type Election struct {
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
}

// Defaults of the Lease's timings: controller-runtime's own, so that a
// process started without the flags behaves as before they existed.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// JitterFactor is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed the retry period times it, and the lease duration
// the renew deadline, or client-go's elector refuses to start.
const JitterFactor = 1.2

// Timings are the durations in effect, the defaults standing for zeros.
func (e Election) Timings() (lease, renew, retry time.Duration) {
	or := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return or(e.LeaseDuration, DefaultLeaseDuration), or(e.RenewDeadline, DefaultRenewDeadline), or(e.RetryPeriod, DefaultRetryPeriod)
}

// Apply sets the election on a controller-runtime manager's options; id
// names the Lease.
func (e Election) Apply(o *ctrl.Options, id string) {
	o.LeaderElection = e.Enabled
	o.LeaderElectionID = id
	o.LeaderElectionNamespace = e.Namespace
	lease, renew, retry := e.Timings()
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
}
