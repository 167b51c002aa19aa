package worker

import "time"

// On SIGTERM the worker stops in two steps, one after the other: the
// controller manager (the pool reconciler, its caches, the leader Lease),
// then the Temporal worker, which stops polling and lets the activities in
// flight finish. The pod's terminationGracePeriodSeconds (deploy/manager/
// worker.yaml) must cover both with a margin for the process's exit, or the
// kubelet kills activities mid-way; much more than that only keeps a hung
// pod around for longer in a rollout. deploy/ tests the two agree.
const (
	// ManagerShutdownTimeout bounds the pool reconciler's stop.
	ManagerShutdownTimeout = 10 * time.Second
	// StopTimeout is how long activities in flight get to report their
	// completion, rather than be retried after their timeout. Every
	// activity is a few API server calls: seconds are plenty.
	StopTimeout = 10 * time.Second
	// ShutdownBudget is the longest a graceful stop takes.
	ShutdownBudget = ManagerShutdownTimeout + StopTimeout
)
