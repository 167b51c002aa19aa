package starter

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	ctrl "sigs.k8s.io/controller-runtime"

	"ate.dev/orchestrator/internal/wfapi"
)

// retireLegacyPoolWorkflows wakes, once, every pool workflow a version before
// the lean switch left running on the task queue: woken on today's code, a
// pool workflow ends (the starter starts each switch itself now). With none
// left it costs one visibility query per start of the leader.
func retireLegacyPoolWorkflows(ctx context.Context, tc client.Client, taskQueue string) error {
	query := fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = 'Running' AND TaskQueue = %q", wfapi.PoolWorkflow, taskQueue)
	log := ctrl.LoggerFrom(ctx).WithName("legacy-pool-workflows")
	var token []byte
	woken := 0
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("listing the pool workflows left by an earlier version: %w", err)
		}
		for _, e := range resp.Executions {
			err := tc.SignalWorkflow(ctx, e.Execution.WorkflowId, e.Execution.RunId, wfapi.SignalReresolve, nil)
			var notFound *serviceerror.NotFound
			if err != nil && !errors.As(err, &notFound) {
				return fmt.Errorf("waking pool workflow %s to retire it: %w", e.Execution.WorkflowId, err)
			}
			woken++
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	if woken > 0 {
		log.Info("woke the pool workflows of an earlier version so that they end", "count", woken)
	}
	return nil
}
