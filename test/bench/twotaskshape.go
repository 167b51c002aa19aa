package main

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/poolevents"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// The switch's shape before decisions/0007, timed beside the product's so
// that the record of the change carries both floors from one run: Protect
// (local), then Claim as a regular activity (run eagerly) whose result is
// recorded before the second workflow task runs ReadConfig, Confirm and
// RecordEvent (local) and records the outcome. It exists only here, on the
// floor's worker, under its own workflow type; it is the happy path of the
// retired code, with the same options, not a switch anyone can run.
const twoTaskSwitchType = "BenchTwoTaskSwitch"

// twoTaskKey keys the retired shape's floor in the results' "shapes".
const twoTaskKey = "two-task-switch"

func twoTaskSwitch(ctx workflow.Context, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	retry := &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}
	regular := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: retry})
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: 365 * 24 * time.Hour, RetryPolicy: retry})
	var a *noopActivities

	var check activities.TargetCheck
	if err := workflow.ExecuteLocalActivity(local, a.Protect, activities.ProtectInput{Config: in.To, Class: in.Class, FromCache: true, Pool: in.Pool}).Get(ctx, &check); err != nil {
		return nil, err
	}
	var claim activities.PoolWrite
	if err := workflow.ExecuteActivity(regular, a.Claim, activities.ClaimInput{Pool: in.Pool, Class: in.Class, Config: in.To,
		ResourceVersion: in.PoolResourceVersion, ExpectFrom: true, From: in.From}).Get(ctx, &claim); err != nil {
		return nil, err
	}
	var live *resolve.Config
	if err := workflow.ExecuteLocalActivity(local, a.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	var w activities.PoolWrite
	if err := workflow.ExecuteLocalActivity(local, a.Confirm, activities.SettleInput{Pool: in.Pool, Class: in.Class, Config: in.To,
		Generation: in.Generation, ResourceVersion: claim.ResourceVersion, Claimed: true}).Get(ctx, &w); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, a.RecordEvent, poolevents.Event{Pool: in.Pool, Reason: "SandboxConfigSwitched",
		Key: "switch/" + workflow.GetInfo(ctx).WorkflowExecution.RunID}).Get(ctx, nil); err != nil {
		return nil, err
	}
	res := &wfapi.SwitchResult{Outcome: wfapi.OutcomeConfirmed}
	// The outcome as the product records it (workflows.recordOutcome).
	_ = workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome))
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": res.Outcome, "sandbox_class": string(in.Class)})
	m.Counter("ate_switches").Inc(1)
	m.Timer("ate_switch_duration").Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	_ = workflow.UpsertMemo(ctx, map[string]any{"summary": wfapi.SwitchSummary(in) + ": " + res.Outcome})
	return res, nil
}
