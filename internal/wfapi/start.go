package wfapi

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/internal/searchattr"
)

// SignalPool wakes the pool workflow of a WorkerPool, starting it if it is
// not running. The signal says "look again"; it carries no diff, so a
// duplicated or reordered signal is harmless.
func SignalPool(ctx context.Context, c client.Client, taskQueue, namespace, name string) error {
	id := PoolWorkflowID(namespace, name)
	_, err := c.SignalWithStartWorkflow(ctx, id, SignalReresolve, nil, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: taskQueue,
		// A pool deleted and created again under the same name gets a new
		// run under the same ID once the old one has ended.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.WorkerPoolKey.ValueSet(PoolKey(namespace, name))),
		Memo:                  map[string]any{"summary": fmt.Sprintf("keeps WorkerPool %s on its SandboxConfig", PoolKey(namespace, name))},
	}, PoolWorkflow, PoolInput{Namespace: namespace, Name: name})
	if err != nil {
		return fmt.Errorf("signalling pool workflow %s: %w", id, err)
	}
	return nil
}

// SignalRelease wakes the release workflow of a SandboxConfig in deletion,
// starting it if it is not running.
func SignalRelease(ctx context.Context, c client.Client, taskQueue, config string) error {
	id := ReleaseWorkflowID(config)
	_, err := c.SignalWithStartWorkflow(ctx, id, SignalRecheck, nil, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.SandboxConfigKey.ValueSet(config)),
		Memo:                  map[string]any{"summary": fmt.Sprintf("releases SandboxConfig %s once no WorkerPool uses it", config)},
	}, ReleaseWorkflow, ReleaseInput{Config: config})
	if err != nil {
		return fmt.Errorf("signalling release workflow %s: %w", id, err)
	}
	return nil
}
