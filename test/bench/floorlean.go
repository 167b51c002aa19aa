package main

import (
	"context"
	"fmt"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// leanSwitch is the product's switch shape (workflows' SandboxConfigSwitch,
// one top-level execution per switch): its first workflow task runs
// Protect as a local activity and schedules Claim, a regular activity the
// server hands back eagerly in the task's completion; its second runs
// ReadConfig, Confirm, RecordEvent and WakeReleases as local activities
// and upserts the Outcome. The memo is set at start.
func leanSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorActivities(ctx)
	local := floorLocalSteps(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	var check floorCheck
	if err := workflow.ExecuteLocalActivity(local, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	var ok bool
	if err := workflow.ExecuteActivity(ctx, nilActs.Claim, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	var live floorCheck
	if err := workflow.ExecuteLocalActivity(local, nilActs.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, nilActs.Confirm, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, nilActs.RecordEvent, in.Pool).Get(ctx, nil); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, nilActs.WakeReleases, []string{in.From}).Get(ctx, nil); err != nil {
		return nil, err
	}
	res, err := finishShape(ctx, in, false)
	if err == nil && !workflow.IsReplaying(ctx) {
		floorCurrent.Load().passDone(in.Pool.key())
	}
	return res, err
}

// leanSwitchID is the floor's lean switch ID of a pool key, as
// wfapi.PoolSwitchWorkflowID names the product's.
func leanSwitchID(key string) string { return key + "/switch" }

// startLeanSwitches starts n lean switches, floorSignalWorker at a time as
// the starter starts them, each with the product's search attributes and
// memo.
func startLeanSwitches(ctx context.Context, tc tclient.Client, n int, prefix, taskQueue string) error {
	err := parallel(ctx, n, floorSignalWorker, func(ctx context.Context, i int) error {
		ref := floorRef{Namespace: namespaceName(i), Name: poolName(i)}
		k := prefix + wfapi.PoolKey(ref.Namespace, ref.Name)
		sw := floorSwitchFor(ref)
		_, err := tc.ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{
			ID: leanSwitchID(k), TaskQueue: taskQueue,
			WorkflowIDReusePolicy: reuseAllowDuplicate,
			TypedSearchAttributes: floorSearchAttributes(k, sw),
			Memo:                  map[string]any{"summary": fmt.Sprintf("%s: sandbox class %q from %q to %q", k, sw.Class, sw.From, sw.To)},
		}, shapeLean.switchType(), sw)
		return err
	})
	if err != nil {
		return fmt.Errorf("starting the floor's lean switches: %w", err)
	}
	return nil
}
