// Package workflows holds the orchestration: the switch workflow
// (SandboxConfigSwitch, switch.go) that moves one class of one WorkerPool to
// the SandboxConfig the starter (or an operator) asked for, one top-level run
// per move; the release workflow (SandboxConfigRelease, release.go) that lets
// a deleted config go once no pool uses it; and the operator workflow
// (Operator, operator.go) that takes operators' re-resolve and recheck
// requests by signal; and the staged rollout of a class default
// (SandboxConfigRollout, rollout.go). These four are the only registered
// types (register.go): the per-pool workflow and its child switches were
// retired before any release (docs/decisions/0003-one-switch-shape.md). Everything
// here is deterministic; every side effect is an activity.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
)

// act names the activities; the worker registers a real value.
var act *activities.Activities

// retryForever retries with capped exponential backoff and never gives up:
// an API server that is down for a while must delay a switch, not fail it.
// Only errors no retry can fix stop it.
var retryForever = &temporal.RetryPolicy{
	InitialInterval:        200 * time.Millisecond,
	BackoffCoefficient:     2,
	MaximumInterval:        30 * time.Second,
	NonRetryableErrorTypes: []string{activities.ErrInvalidInput},
}

// activityTimeout bounds one attempt of an activity. Every activity is a few
// API calls that take milliseconds, so an attempt still open after this is
// lost (its worker died, or its completion did): the timeout is how long a
// crash delays a step, since nothing else tells the server the attempt is
// gone. Long enough for a slow API server under load, short enough that a
// killed worker costs a step seconds rather than half a minute.
const activityTimeout = 10 * time.Second

// withActivities sets the options of the Kubernetes activities.
func withActivities(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: activityTimeout,
		RetryPolicy:         retryForever,
	})
}

// liveListTimeout bounds one attempt of Unprotect, which lists every
// WorkerPool live: a page of 500 takes well under a second, so this is room
// for a fleet of hundreds of thousands of pools. An attempt heartbeats
// after each page, and its heartbeat timeout, the usual activityTimeout, is
// what detects a dead worker; a retry resumes from its last heartbeat.
const liveListTimeout = 10 * time.Minute

// withLiveList sets the options of the activity that lists every pool live.
func withLiveList(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: liveListTimeout,
		HeartbeatTimeout:    activityTimeout,
		RetryPolicy:         retryForever,
	})
}

// withLocalActivities sets the options of the steps that run as local
// activities, in the workflow's own task, saving a round trip through the
// server each: every step of a switch (see Switch). An attempt is bounded as
// a regular activity's is. They retry as the regular activities do, forever: the SDK retries a
// failing local activity inside the workflow task while the backoff is
// shorter than the task's timeout, and from a server timer once it is
// longer. A switch whose step gave up would leave its claim standing, and
// an API server outage may outlast any bound.
func withLocalActivities(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    activityTimeout,
		ScheduleToCloseTimeout: localGiveUpAfter,
		RetryPolicy:            retryForever,
	})
}

// localGiveUpAfter is "never" for a local activity. The SDK gives one
// without a schedule-to-close timeout its start-to-close timeout instead,
// so a local step would stop retrying after 10 s: an API server down for
// longer must delay a pass or a switch, not fail it.
const localGiveUpAfter = 10 * 365 * 24 * time.Hour

// historyLimit is where a long-lived workflow continues as new even if the
// server has not suggested it yet, so a replay never has to walk far.
const historyLimit = 4000

func shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit
}

// drain empties a signal channel: any number of pending wake-ups is one pass.
func drain(ch workflow.ReceiveChannel) int {
	n := 0
	for ch.ReceiveAsync(nil) {
		n++
	}
	return n
}
