package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
)

// countsChange is the GetVersion change ID of the rollout that keeps
// status.rollout's counts current while it waits on something other than
// its pools (a hold, an approval, a bake) with KeepRolloutCounts: version
// 1. Runs begun before it leave the counts as their last status write
// had them until their next one.
const countsChange = "rollout-counts"

// keepCounts runs KeepRolloutCounts beside whatever the run waits on, until
// stop is called: the pools an abort or a roll back sends back, and those
// created, deleted or relabelled in the class meanwhile, show in the counts
// as they move, not at the run's next status write. The run does not wait
// for the activity to hear its cancellation: its writes are bound to the
// status it read, so one made after the run wrote status again is refused.
func (r *plannedRollout) keepCounts(ctx workflow.Context) (stop func()) {
	if !r.counts {
		return func() {}
	}
	kctx, cancel := workflow.WithCancel(ctx)
	kctx = workflow.WithActivityOptions(kctx, workflow.ActivityOptions{
		StartToCloseTimeout: activities.KeepCountsBound + activityTimeout,
		HeartbeatTimeout:    activityTimeout,
		RetryPolicy:         retryForever,
	})
	in := activities.KeepCountsInput{Config: r.config, UID: r.uid}
	workflow.Go(kctx, func(ctx workflow.Context) {
		// It returns at KeepCountsBound: start it again, so that a hold of
		// days costs a few events an hour.
		for {
			var why string
			err := workflow.ExecuteActivity(ctx, act.KeepRolloutCounts, in).Get(ctx, &why)
			if err != nil && !temporal.IsCanceledError(err) {
				workflow.GetLogger(ctx).Warn("rollout counts no longer kept until the next status write", "config", r.config, "error", err)
			}
			if err != nil || why != activities.CountsBound || ctx.Err() != nil {
				return
			}
		}
	})
	return cancel
}
