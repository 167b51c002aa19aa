package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	ctrl "sigs.k8s.io/controller-runtime"

	"ate.dev/orchestrator/internal/wfapi"
)

// operatorCheckEvery is how often the leading starter makes sure the
// operator workflow runs: one cheap start request (a no-op while it runs),
// so one terminated by hand is back within this.
const operatorCheckEvery = time.Minute

// keepOperatorRunning starts the operator workflow of the task queue when
// the starter gains leadership, and again every operatorCheckEvery, with
// USE_EXISTING: while it runs, the request returns the running execution
// and changes nothing. It returns when ctx is done.
func keepOperatorRunning(ctx context.Context, tc client.Client, taskQueue string) error {
	log := ctrl.LoggerFrom(ctx).WithValues("workflowID", wfapi.OperatorWorkflowID(taskQueue))
	tick := time.NewTicker(operatorCheckEvery)
	defer tick.Stop()
	for {
		if err := StartOperator(ctx, tc, taskQueue); err != nil && ctx.Err() == nil {
			// Not fatal: only operators' signals need it, and the next
			// tick tries again.
			log.Error(err, "could not start the operator workflow")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// StartOperator starts the operator workflow of taskQueue unless it runs.
func StartOperator(ctx context.Context, tc client.Client, taskQueue string) error {
	id := wfapi.OperatorWorkflowID(taskQueue)
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		Memo:                     map[string]any{"summary": "takes operators' reresolve and recheck signals (docs/operating-with-the-cli.md)"},
		StaticSummary:            "operators' reresolve and recheck requests",
	}, wfapi.OperatorWorkflow, wfapi.OperatorInput{})
	if err != nil {
		return fmt.Errorf("starting the operator workflow %s: %w", id, err)
	}
	return nil
}
