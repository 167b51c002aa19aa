package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// The pool+child shapes: the product's shape before the lean switch, and
// two variants of its child measured then. A pool-shaped parent, already
// running and idle, is woken by a signal-with-start, drains its signals,
// runs one local activity (Observe), runs a child switch with the
// product's child options and search attributes, and waits for the next
// signal.
const floorPoolType = "BenchFloorPool"

type floorPoolInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Prefix begins the workflow IDs of the shape.
	Prefix string `json:"prefix"`
	Shape  shape  `json:"shape"`
	// Warm starts the workflow idle, as a pool workflow that has already
	// passed once: it reports that it is ready and waits for a signal.
	Warm bool `json:"warm,omitempty"`
}

func drainSignals(ch workflow.ReceiveChannel) {
	for ch.ReceiveAsync(nil) {
	}
}

// floorPool is the pool workflow's shape.
func floorPool(ctx workflow.Context, in floorPoolInput) error {
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	ref := floorRef{Namespace: in.Namespace, Name: in.Name}
	if in.Warm {
		if err := workflow.ExecuteLocalActivity(floorLocal(ctx), nilActs.Ready, ref.key()).Get(ctx, nil); err != nil {
			return err
		}
		reresolve.Receive(ctx, nil)
	}
	switches := 0
	for {
		drainSignals(reresolve)
		var obs floorObservation
		if err := workflow.ExecuteLocalActivity(floorLocal(ctx), nilActs.Observe, ref).Get(ctx, &obs); err != nil {
			return err
		}
		ref.UID = obs.UID
		switches++
		sw := floorSwitchFor(ref)
		sw.Generation = obs.Generation
		key := in.Prefix + wfapi.PoolKey(ref.Namespace, ref.Name)
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            fmt.Sprintf("%s/switch/%d", key, switches),
			TypedSearchAttributes: floorSearchAttributes(key, sw),
			Memo:                  map[string]any{"summary": fmt.Sprintf("%s: sandbox class %q from %q to %q", key, sw.Class, sw.From, sw.To)},
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_TERMINATE,
			WorkflowIDReusePolicy: reuseAllowDuplicate,
		})
		var out floorResult
		if err := workflow.ExecuteChildWorkflow(cctx, in.Shape.switchType(), sw).Get(ctx, &out); err != nil {
			return err
		}
		if !workflow.IsReplaying(ctx) {
			// A pass after a switch applies nothing: the Observation shows
			// the Deployment as wanted. Telling the bench the pass is over
			// from workflow code adds no event (replays tell it nothing).
			floorCurrent.Load().passDone(ref.key())
		}
		reresolve.Receive(ctx, nil)
	}
}

// childSwitch is the child switch of the pool+child product (workflows.Switch
// with local steps): the version it records, five steps of which the pool
// writes (Claim, Confirm) are regular activities and the rest local ones,
// then the outcome as a search attribute and in the memo.
func childSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorActivities(ctx)
	local := floorLocalSteps(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	// That switch asked this once per run: a marker and a
	// TemporalChangeVersion search attribute update in every history.
	workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1)
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
	if err := workflow.ExecuteActivity(ctx, nilActs.Confirm, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, nilActs.RecordEvent, in.Pool).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in, true)
}

// mergedSwitch runs the same steps in two activities: protect then claim
// (the finalizer still lands before the claim, and a retry repeats both,
// each idempotent), and read then confirm or roll back then the event (the
// event still follows the write it reports).
func mergedSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorActivities(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	var check floorCheck
	if err := workflow.ExecuteActivity(ctx, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteActivity(ctx, nilActs.Settle, in).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in, true)
}

// localChildSwitch runs the same five steps, in the same order, as local
// activities, which the worker runs inside the workflow task: one marker
// event each instead of three events and a round trip through the
// server's queues.
func localChildSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorLocal(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	var check floorCheck
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	var ok bool
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Claim, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	var live floorCheck
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Confirm, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.RecordEvent, in.Pool).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in, true)
}

// floorPoolOptions are a floor pool workflow's start options, as the
// starter's signal-with-start sets them.
func floorPoolOptions(prefix, taskQueue string, i int) tclient.StartWorkflowOptions {
	id := prefix + wfapi.PoolKey(namespaceName(i), poolName(i))
	return tclient.StartWorkflowOptions{
		ID: id, TaskQueue: taskQueue,
		WorkflowIDReusePolicy: reuseAllowDuplicate,
		TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.WorkerPoolKey.ValueSet(id)),
		Memo:                  map[string]any{"summary": "keeps WorkerPool " + id + " on its SandboxConfig"},
	}
}

// startFloorPools starts the n pool workflows idle and waits until each
// has reported ready and the server has acknowledged each one's first
// workflow task, so that none of the warm-up overlaps the timed part.
func startFloorPools(ctx context.Context, tc tclient.Client, lat *latencies, acts *floorActs, n int, sh shape, prefix, taskQueue string) error {
	if err := parallel(ctx, n, floorSignalWorker, func(ctx context.Context, i int) error {
		_, err := tc.ExecuteWorkflow(ctx, floorPoolOptions(prefix, taskQueue, i), floorPoolType,
			floorPoolInput{Namespace: namespaceName(i), Name: poolName(i), Prefix: prefix, Shape: sh, Warm: true})
		return err
	}); err != nil {
		return fmt.Errorf("starting the floor's pool workflows: %w", err)
	}
	ready, _, _ := acts.trackers()
	if err := waitTimeout(ctx, ready, 10*time.Minute); err != nil {
		return fmt.Errorf("floor pools did not start: %w", err)
	}
	return until(ctx, 2*time.Minute, "the floor pools' first workflow tasks", func() (bool, string) {
		c := lat.workflowTaskCompletions()
		return c >= n, fmt.Sprintf("%d of %d completed", c, n)
	})
}

// signalFloorPools wakes the n pool workflows with signal-with-starts sent
// as the starter sent them.
func signalFloorPools(ctx context.Context, tc tclient.Client, n int, sh shape, prefix, taskQueue string) error {
	err := parallel(ctx, n, floorSignalWorker, func(ctx context.Context, i int) error {
		o := floorPoolOptions(prefix, taskQueue, i)
		_, err := tc.SignalWithStartWorkflow(ctx, o.ID, wfapi.SignalReresolve, nil, o, floorPoolType,
			floorPoolInput{Namespace: namespaceName(i), Name: poolName(i), Prefix: prefix, Shape: sh})
		return err
	})
	if err != nil {
		return fmt.Errorf("signalling the floor's pool workflows: %w", err)
	}
	return nil
}
