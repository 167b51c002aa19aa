package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// cluster is the cluster the workflow acts for, as its ID names it: a
// workflow knows its cluster from its ID alone, the same on every replay,
// and the worker's activities refuse a step of any other cluster
// (activities.ClusterGuard).
func cluster(ctx workflow.Context) (wfapi.Cluster, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	c, ok := wfapi.ClusterOf(id)
	if !ok {
		return "", temporal.NewNonRetryableApplicationError(
			"workflow ID "+id+" names no cluster: the product's workflow IDs begin with their cluster, as "+
				wfapi.Cluster("<cluster>").SwitchWorkflowID("<namespace>", "<name>")+" does",
			wfapi.ErrNoCluster, nil)
	}
	return c, nil
}

// clusterAttribute is the KubernetesCluster search attribute of c, to
// upsert when the workflow's start did not set it (a start by hand, with
// the CLI): every workflow of the product is listed under its cluster.
// None when the start set it.
func clusterAttribute(ctx workflow.Context, c wfapi.Cluster) []temporal.SearchAttributeUpdate {
	if _, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(searchattr.KubernetesClusterKey); ok {
		return nil
	}
	return []temporal.SearchAttributeUpdate{searchattr.KubernetesClusterKey.ValueSet(string(c))}
}

// recordCluster upserts the cluster's search attribute if the start did
// not set it.
func recordCluster(ctx workflow.Context, c wfapi.Cluster) {
	if attrs := clusterAttribute(ctx, c); len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			workflow.GetLogger(ctx).Warn("could not record the cluster as a search attribute", "error", err)
		}
	}
}

// metricsClusterLabel labels the workflows' own metrics with their cluster,
// so that a Prometheus that scrapes a fleet's workers keeps the clusters'
// switches and releases apart.
const metricsClusterLabel = "kubernetes_cluster"

// clusterOf is the cluster of a workflow that has checked its ID (cluster).
func clusterOf(ctx workflow.Context) wfapi.Cluster {
	c, _ := wfapi.ClusterOf(workflow.GetInfo(ctx).WorkflowExecution.ID)
	return c
}
