package producttest

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"go.temporal.io/api/workflowservice/v1"

	"ate.dev/orchestrator/internal/wfapi"
)

// Cluster is the cluster the product names itself after: ClusterName if
// set, else the test API server's default identity (its kube-system
// namespace's UID).
func (p *Product) Cluster() wfapi.Cluster { return cmp.Or(p.ClusterName, p.Env.ClusterName) }

// Scope is where the product's workflows run: its cluster and its task
// queue, the cluster's default one when TaskQueue is empty (as the worker
// and the starter default it).
func (p *Product) Scope() wfapi.Scope {
	return wfapi.ScopeOf(p.Cluster(), p.TaskQueue)
}

// WaitForRelease polls the visibility store until the release workflow of a
// config reports an outcome.
func (p *Product) WaitForRelease(t testing.TB, config, outcome string) {
	t.Helper()
	query := fmt.Sprintf("WorkflowId = %q AND Outcome = %q", p.Cluster().ReleaseWorkflowID(config), outcome)
	Eventually(t, "release workflow of "+config+" "+outcome, func() (bool, string) {
		resp, err := p.TemporalClient().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) > 0, fmt.Sprintf("%d executions match %s", len(resp.Executions), query)
	})
}
