package workflows

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/internal/wfapi"
)

// Registry is what a worker and a replayer both register with: the same
// workflow names, so a replayed history finds the code that wrote it.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// RegisterWorkflows registers every workflow under its stable name.
func RegisterWorkflows(r Registry) {
	r.RegisterWorkflowWithOptions(Switch, workflow.RegisterOptions{Name: wfapi.SwitchWorkflow})
	r.RegisterWorkflowWithOptions(Release, workflow.RegisterOptions{Name: wfapi.ReleaseWorkflow})
	r.RegisterWorkflowWithOptions(Operator, workflow.RegisterOptions{Name: wfapi.OperatorWorkflow})
	r.RegisterWorkflowWithOptions(Rollout, workflow.RegisterOptions{Name: wfapi.RolloutWorkflow})
}

// ActivityRegistry is a worker's activity registration.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// RegisterActivities registers the activities under their method names,
// which is how the workflows call them.
func RegisterActivities(r ActivityRegistry, a *activities.Activities) {
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{})
}
