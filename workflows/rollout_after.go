package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/rollout"
)

// afterChange is the GetVersion change ID of the rollout held on
// AwaitingClusters (spec.rollout.after, docs/decisions/0027-waves-across-clusters.md):
// version 1 records the clusters it waits for in status and waits with
// AwaitClusters, which returns when their rollouts change, as well as for a
// signal. It is asked where the code parts, at such a hold: a history
// recorded before it has none (the planner never held so then), and one
// without the marker there goes on as the plain hold it was.
const afterChange = "rollout-after"

// awaitClustersTimeout bounds one attempt of AwaitClusters, which returns
// by itself within activities.AwaitClustersBound and heartbeats meanwhile:
// the heartbeat timeout is what finds a dead worker.
const awaitClustersTimeout = activities.AwaitClustersBound + 5*time.Minute

// awaitClusters holds the rollout on AwaitingClusters until its next look
// is due: the awaited clusters' rollouts read otherwise than the look saw
// them, the bake of spec.rollout.after ended, AwaitClusters' bound passed,
// or a signal (recheck, pause, resume) came. Nobody signals this cluster
// when another one's rollout completes, hence the reads; one activity per
// change over there, not a timer per read, keeps a wait of hours to a few
// history events. The status is written only when it says something new,
// for the same reason.
func (r *plannedRollout) awaitClusters(ctx workflow.Context, v rollout.Verdict, look *activities.RolloutLook) error {
	if workflow.GetVersion(ctx, afterChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v.Phase, Message: v.Message, PausedSeen: v.PausedSeen}); err != nil {
			return err
		}
		return workflow.Await(ctx, func() bool { return r.recheck })
	}
	if !rollout.AwaitWritten(look.Status, v) {
		if err := r.setStatus(ctx, activities.RolloutStatusInput{Phase: v.Phase, Message: v.Message, AwaitingClusters: v.Awaiting}); err != nil {
			return err
		}
	}
	signalled := func() bool { return r.recheck || r.pauseSignal || r.resumeSignal }
	if len(look.After) == 0 && v.ReadyAt == nil {
		// Nothing to read (a refusal: the cluster lists itself): only a
		// change of the spec, which the starter signals, moves it.
		return workflow.Await(ctx, signalled)
	}
	waitCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: awaitClustersTimeout, HeartbeatTimeout: activityTimeout, RetryPolicy: retryForever,
	}))
	defer cancel() // a signal came first: the next look acts on it
	waiting := workflow.ExecuteActivity(waitCtx, act.AwaitClusters, activities.AwaitClustersInput{Config: r.config, Seen: look.After, ReadyAt: v.ReadyAt})
	if err := workflow.Await(ctx, func() bool { return waiting.IsReady() || signalled() }); err != nil {
		return err
	}
	if !waiting.IsReady() {
		return nil
	}
	return waiting.Get(ctx, nil)
}
