package producttest

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/api/workflowservice/v1"

	"ate.dev/orchestrator/internal/wfapi"
)

// WaitForRelease polls the visibility store until the release workflow of a
// config reports an outcome.
func (p *Product) WaitForRelease(t testing.TB, config, outcome string) {
	t.Helper()
	query := fmt.Sprintf("WorkflowId = %q AND Outcome = %q", wfapi.ReleaseWorkflowID(config), outcome)
	Eventually(t, "release workflow of "+config+" "+outcome, func() (bool, string) {
		resp, err := p.TemporalClient().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) > 0, fmt.Sprintf("%d executions match %s", len(resp.Executions), query)
	})
}
