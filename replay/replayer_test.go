package replay

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	ateworker "ate.dev/orchestrator/worker"
	"ate.dev/orchestrator/workflows"
)

// ReplayerOptions are the options of every replayer of this repository:
// the worker's (ateworker.ReplayerOptions, built beside the worker's own
// Temporal options), or a replay would check other code than production
// runs. TestReplayerMatchesWorker compares the two.
func ReplayerOptions() worker.WorkflowReplayerOptions {
	return ateworker.ReplayerOptions()
}

// NewReplayer returns a replayer with every workflow registered exactly as
// the worker registers them (workflows.RegisterWorkflows: same names, same
// functions), with ReplayerOptions.
func NewReplayer() (worker.WorkflowReplayer, error) {
	return newReplayer(workflows.RegisterWorkflows)
}

// newReplayer lets a test register something else (the guard tests register
// a deliberately changed workflow under a production name) and add
// interceptors after the worker's (the ordering checks record the inputs a
// workflow gives its local activities, which the history does not hold).
func newReplayer(register func(workflows.Registry), extra ...interceptor.WorkerInterceptor) (worker.WorkflowReplayer, error) {
	opts := ReplayerOptions()
	opts.Interceptors = append(slices.Clone(opts.Interceptors), extra...)
	r, err := worker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		return nil, err
	}
	register(r)
	return r, nil
}

// ReplayFixture replays a fixture with r as a worker replays the workflow it
// picks up: under the workflow ID and run ID the history was recorded under
// (see Execution; a switch learns its pool from its workflow ID).
func ReplayFixture(r worker.WorkflowReplayer, logger log.Logger, fx Fixture) error {
	exec, err := fx.Execution()
	if err != nil {
		return err
	}
	h, err := ReadHistory(fx.Path)
	if err != nil {
		return err
	}
	if err := r.ReplayWorkflowHistoryWithOptions(logger, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: exec.WorkflowExecution(),
	}); err != nil {
		return fmt.Errorf("replaying %s as %s (run %s): %w", fx.Path, exec.WorkflowID, exec.RunID, err)
	}
	return nil
}
