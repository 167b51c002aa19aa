package starter

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	ctrl "sigs.k8s.io/controller-runtime"

	"ate.dev/orchestrator/internal/wfapi"
)

// operatorCheckEvery is how often the leading starter makes sure the
// operator workflow runs: one cheap start request (a no-op while it runs),
// so one terminated by hand is back within this.
const operatorCheckEvery = time.Minute

// keepOperatorRunning starts the cluster's operator workflow when
// the starter gains leadership, and again every operatorCheckEvery, with
// USE_EXISTING: while it runs, the request returns the running execution
// and changes nothing. It returns when ctx is done.
func keepOperatorRunning(ctx context.Context, tc client.Client, scope wfapi.Scope) error {
	log := ctrl.LoggerFrom(ctx).WithValues("workflowID", scope.Cluster.OperatorWorkflowID())
	tick := time.NewTicker(operatorCheckEvery)
	defer tick.Stop()
	for {
		if err := wfapi.StartOperator(ctx, tc, scope); err != nil && ctx.Err() == nil {
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
