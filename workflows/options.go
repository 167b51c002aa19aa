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
	"errors"
	"slices"
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
// server each: every step of a switch (see Switch and step). An attempt is
// bounded as a regular activity's is; the quick retries of a step are
// bounded by localRetryWindow, after which step hands it to the server.
func withLocalActivities(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    activityTimeout,
		ScheduleToCloseTimeout: localRetryWindow,
		RetryPolicy:            retryForever,
	})
}

// localRetryWindow is how long a switch's step is retried as a local
// activity: inside the workflow task, with no history event per retry, and
// within the 8 s after which the SDK would heartbeat the task (80% of its
// 10 s timeout), each heartbeat three events. With the 0.2 s doubling
// backoff that is six attempts, the last 6.2 s after the first: enough for a
// conflict or a blip. A local activity retried past the task's timeout
// would wait on a server timer, six events a retry (51,200 events, the
// server's limit, in about three days at the 30 s cap): step runs it as a
// regular activity instead (docs/decisions/0012-stuck-step-history.md).
const localRetryWindow = 8 * time.Second

// step runs one step of a switch: first as a local activity, retried in the
// workflow task for localRetryWindow; then, if it still fails with an error
// a retry can fix, as a regular activity with the same input, which the
// server retries for as long as it fails without adding a history event per
// attempt (its last failure and attempt count show in the workflow's pending
// activities). Every step is idempotent and reads what it acts on, so its
// regular run after failed local attempts is one more attempt. The future
// holds the step's result, or its error; cancelling ctx cancels the step.
func step(ctx workflow.Context, activity, arg any) workflow.Future {
	f, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		local := workflow.ExecuteLocalActivity(withLocalActivities(ctx), activity, arg)
		if err := local.Get(ctx, nil); !stillFailing(err) {
			settle.Chain(local)
			return
		}
		settle.Chain(workflow.ExecuteActivity(withActivities(ctx), activity, arg))
	})
	return f
}

// stillFailing says whether a local step ended with an error a retry can fix
// (it ran out of its local retries), rather than succeeding, being
// cancelled, or failing in a way no retry changes.
func stillFailing(err error) bool {
	if err == nil || temporal.IsCanceledError(err) {
		return false
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && (app.NonRetryable() || slices.Contains(retryForever.NonRetryableErrorTypes, app.Type())) {
		return false
	}
	return true
}

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
