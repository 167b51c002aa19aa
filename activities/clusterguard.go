package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/internal/wfapi"
)

// ErrForeignCluster is the error type of a step refused because its
// workflow belongs to another cluster than the worker's, or names none.
const ErrForeignCluster = "ForeignCluster"

// ClusterGuard refuses every activity, local or regular, of a workflow whose
// ID names another cluster than the worker's (or names none), before it
// reads or writes anything: a worker acts on its own cluster only, whoever
// started the workflow, on whichever task queue, with whatever input. Each
// cluster's default task queue is its own, so only a hand-started workflow
// or two clusters given one task queue reach it; the refusal fails the
// workflow with an error that names both clusters, as no retry on this
// worker can help.
//
// It is where the calling workflow's ID is parsed, once per activity
// execution: the activity it lets through finds its Caller in its context,
// for every check of it (checkCaller) and for the run its status writes
// stamp (switchRun).
func ClusterGuard(cluster wfapi.Cluster) interceptor.WorkerInterceptor {
	return &clusterGuard{cluster: cluster}
}

type clusterGuard struct {
	interceptor.WorkerInterceptorBase
	cluster wfapi.Cluster
}

func (g *clusterGuard) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &clusterGuardActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, cluster: g.cluster}
}

type clusterGuardActivity struct {
	interceptor.ActivityInboundInterceptorBase
	cluster wfapi.Cluster
}

func (a *clusterGuardActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	caller := callerOfInfo(info)
	if err := checkCluster(a.cluster, caller.WorkflowRef, info.ActivityType.Name); err != nil {
		return nil, err
	}
	return a.Next.ExecuteActivity(withCaller(ctx, caller), in)
}

// CheckCluster is ClusterGuard's check of one step: nil when the workflow
// ID names the worker's cluster.
func CheckCluster(worker wfapi.Cluster, workflowID, step string) error {
	return checkCluster(worker, wfapi.ParseWorkflowID(workflowID), step)
}

// checkCluster is CheckCluster of an ID parsed.
func checkCluster(worker wfapi.Cluster, workflow wfapi.WorkflowRef, step string) error {
	switch owner := workflow.Cluster; {
	case owner == "":
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"workflow %q names no cluster: the worker of cluster %q refuses its step %s (a workflow ID begins with its cluster, as %s does)",
			workflow.ID, worker, step, worker.SwitchWorkflowID("<namespace>", "<name>")), ErrForeignCluster, nil)
	case owner != worker:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"workflow %q belongs to cluster %q: the worker of cluster %q refuses its step %s, which would read or write the wrong cluster",
			workflow.ID, owner, worker, step), ErrForeignCluster, nil)
	}
	return nil
}
