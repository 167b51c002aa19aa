package options

import (
	"flag"
	"os"
)

// LeaderElection makes replicas of a process safe: the starter's controllers
// and the worker's pool reconciler run on the replica that holds a Lease.
type LeaderElection struct {
	Enabled bool
	// Namespace of the Lease; the pod's namespace when empty, which
	// controller-runtime cannot guess out of a cluster.
	Namespace string
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable.
func (l *LeaderElection) BindFlags(fs *flag.FlagSet) {
	v := os.Getenv("LEADER_ELECT")
	fs.BoolVar(&l.Enabled, "leader-elect", v == "1" || v == "true",
		"elect a leader among replicas, so that two replicas are safe (env LEADER_ELECT)")
	fs.StringVar(&l.Namespace, "leader-election-namespace", os.Getenv("LEADER_ELECTION_NAMESPACE"),
		"namespace of the leader election Lease; defaults to the pod's namespace (env LEADER_ELECTION_NAMESPACE)")
}
