package replay

import (
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/crashhook"
	"ate.dev/orchestrator/workflows"
)

// ReplayerOptions are the options of every replayer of this repository. They
// must match what the worker runs the workflows with, or a replay checks
// other code than production runs:
//
//   - the data converter and failure converter: the worker takes them from
//     its Temporal client, which internal/options leaves at the SDK
//     defaults, so they are left at the defaults here too;
//   - the interceptors: the worker's main passes crashhook.Interceptors()
//     (none outside crash-test builds), and so does this;
//   - context propagators and plugins: none.
//
// When the worker gains a data converter, codec, interceptor, context
// propagator or plugin, make it a function both the worker and this call
// (as crashhook.Interceptors is); TestReplayerMatchesWorker fails until then.
func ReplayerOptions() worker.WorkflowReplayerOptions {
	return worker.WorkflowReplayerOptions{
		Interceptors: crashhook.Interceptors(),
	}
}

// NewReplayer returns a replayer with every workflow registered exactly as
// the worker registers them (workflows.RegisterWorkflows: same names, same
// functions), with ReplayerOptions.
func NewReplayer() (worker.WorkflowReplayer, error) {
	return newReplayer(workflows.RegisterWorkflows)
}

// newReplayer lets a test register something else: the guard tests register
// a deliberately changed workflow under a production name.
func newReplayer(register func(workflows.Registry)) (worker.WorkflowReplayer, error) {
	r, err := worker.NewWorkflowReplayerWithOptions(ReplayerOptions())
	if err != nil {
		return nil, err
	}
	register(r)
	return r, nil
}
