package wfapi

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/internal/searchattr"
)

// SignalRelease wakes the release workflow of a SandboxConfig in deletion,
// starting it if it is not running.
func SignalRelease(ctx context.Context, c client.Client, scope Scope, config string) error {
	id := scope.Cluster.ReleaseWorkflowID(config)
	_, err := c.SignalWithStartWorkflow(ctx, id, SignalRecheck, nil, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             scope.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.KubernetesClusterKey.ValueSet(string(scope.Cluster)), searchattr.SandboxConfigKey.ValueSet(config)),
		Memo:          map[string]any{"summary": fmt.Sprintf("releases SandboxConfig %s once no WorkerPool uses it", config)},
		StaticSummary: ReleaseStaticSummary(scope.Cluster, config),
	}, ReleaseWorkflow, ReleaseInput{Config: config})
	if err != nil {
		return fmt.Errorf("signalling release workflow %s: %w", id, err)
	}
	return nil
}

// ErrSwitchRunning says a switch of the pool is running: StartSwitch started
// nothing. The starter looks at the pool again once it is done.
var ErrSwitchRunning = errors.New("a switch of the pool is running")

// StartSwitch starts the switch that makes in's move, as a top-level
// execution with the search attributes an operator traces it by. One runs
// at a time per pool: while one runs, it starts nothing and returns
// ErrSwitchRunning.
func StartSwitch(ctx context.Context, c client.Client, scope Scope, in SwitchInput) error {
	opts := SwitchStartOptions(scope, in)
	_, err := c.ExecuteWorkflow(ctx, opts, SwitchWorkflow, in)
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &running):
		return fmt.Errorf("starting switch workflow %s: %w", opts.ID, ErrSwitchRunning)
	case err != nil:
		return fmt.Errorf("starting switch workflow %s: %w", opts.ID, err)
	}
	return nil
}

// SwitchStartOptions are the options StartSwitch starts the switch of in
// with.
func SwitchStartOptions(scope Scope, in SwitchInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        scope.Cluster.SwitchWorkflowID(in.Pool.Namespace, in.Pool.Name),
		TaskQueue: scope.TaskQueue,
		// Each switch of a pool is a new run under the pool's switch ID.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    temporal.NewSearchAttributes(SwitchAttributes(scope.Cluster, in)...),
		Memo:                                     map[string]any{"summary": SwitchSummary(in)},
		StaticSummary:                            SwitchStaticSummary(scope.Cluster, in),
		StaticDetails:                            SwitchStaticDetails(in),
	}
}

// Reresolve asks for a fresh look at a pool, as an operator does from the
// CLI: it signals `reresolve` to the pool's running switch, which looks
// again once it is done (or at once, if it has not claimed yet), or starts a
// switch with no move, which decides on a live read (and ends "up to date" when there is nothing to do). payload is
// ignored by the workflow; the operator's `--input` lands there.
func Reresolve(ctx context.Context, c client.Client, scope Scope, namespace, name string, payload any) error {
	id := scope.Cluster.SwitchWorkflowID(namespace, name)
	none := SwitchInput{Pool: PoolRef{Namespace: namespace, Name: name}} // no move: the run decides
	_, err := c.SignalWithStartWorkflow(ctx, id, SignalReresolve, payload, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             scope.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.KubernetesClusterKey.ValueSet(string(scope.Cluster)), searchattr.WorkerPoolKey.ValueSet(PoolKey(namespace, name))),
		Memo:          map[string]any{"summary": fmt.Sprintf("%s: re-resolve on request", PoolKey(namespace, name))},
		StaticSummary: SwitchStaticSummary(scope.Cluster, none),
		StaticDetails: SwitchStaticDetails(none),
	}, SwitchWorkflow, SwitchInput{})
	if err != nil {
		return fmt.Errorf("signalling switch workflow %s: %w", id, err)
	}
	return nil
}

// SignalSwitch signals `reresolve` to the pool's running switch, as the
// starter does when the pool needs another move than the one that switch
// works on: before its claim the switch yields at once (continues as new
// and plans what the pool then asks for), after it the switch looks again
// once it has ended. It starts nothing: a switch that has ended since is
// reported as an error, and the starter's next try starts the move.
func SignalSwitch(ctx context.Context, c client.Client, cluster Cluster, namespace, name string) error {
	id := cluster.SwitchWorkflowID(namespace, name)
	if err := c.SignalWorkflow(ctx, id, "", SignalReresolve, nil); err != nil {
		return fmt.Errorf("signalling %s to switch workflow %s: %w", SignalReresolve, id, err)
	}
	return nil
}

// RunningSwitch returns the input the pool's current switch run was
// started with: the move a starter planned for it, or no move for a run an
// operator started or one continued as new for a fresh look (such a run
// decides its move on a live read). It reads the run's first history event
// only; a starter that knows nothing of a running switch (after its own
// restart, or a leader handover) asks this before asking the switch to
// re-plan.
func RunningSwitch(ctx context.Context, c client.Client, cluster Cluster, namespace, name string) (SwitchInput, error) {
	id := cluster.SwitchWorkflowID(namespace, name)
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return SwitchInput{}, fmt.Errorf("reading the start of switch workflow %s: empty history", id)
	}
	ev, err := it.Next()
	if err != nil {
		return SwitchInput{}, fmt.Errorf("reading the start of switch workflow %s: %w", id, err)
	}
	started := ev.GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return SwitchInput{}, fmt.Errorf("reading the start of switch workflow %s: its first event is %s", id, ev.GetEventType())
	}
	var in SwitchInput
	if started.GetInput() == nil {
		return in, nil
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(started.GetInput(), &in); err != nil {
		return SwitchInput{}, fmt.Errorf("decoding the input of switch workflow %s: %w", id, err)
	}
	return in, nil
}

// StartOperator starts the cluster's operator workflow unless it runs: with
// USE_EXISTING, a start while it runs returns the running execution and
// changes nothing.
func StartOperator(ctx context.Context, c client.Client, scope Scope) error {
	id := scope.Cluster.OperatorWorkflowID()
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                scope.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(searchattr.KubernetesClusterKey.ValueSet(string(scope.Cluster))),
		Memo:                     map[string]any{"summary": OperatorSummary},
		StaticSummary:            fmt.Sprintf("[%s] operators' reresolve and recheck requests", scope.Cluster),
	}, OperatorWorkflow, OperatorInput{})
	if err != nil {
		return fmt.Errorf("starting the operator workflow %s: %w", id, err)
	}
	return nil
}
