// Package rolloutplan is the plan of a config's staged rollout over its
// class's pools: what the rollout workflow answers its plan query with, and
// what every preview (the starter's, the kubectl plugin's) shows. Both
// processes and the plugin import it; Of and PreviewOf are pure, and
// ReadPreview reads what PreviewOf needs from a client.
package rolloutplan

import (
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// Of is the plan of a config's rollout over pools (in rollout order):
// the pools admitted so far, and those each remaining step would admit.
// A config without spec.rollout moves every pool in one step.
func Of(c *v1alpha1.SandboxConfig, pools []rollout.Pool) wfapi.RolloutPlan {
	steps := []v1alpha1.RolloutStep{{}}
	if c.Spec.Rollout != nil {
		steps = c.Spec.Rollout.Steps
	}
	plan := wfapi.RolloutPlan{Config: c.Name, Total: len(pools), Moved: []string{}}
	if st := c.Status.Rollout; st != nil {
		plan.Phase, plan.Step, plan.Message = string(st.Phase), st.Step, st.Message
	}
	admitted, planned := rollout.Plan(pools, c.Name, steps, plan.Step+1, rollout.StatusAdmission(c.Status.Rollout))
	plan.Admitted = append([]string{}, admitted...)
	for _, p := range pools {
		if p.Current == c.Name {
			plan.Moved = append(plan.Moved, p.Key.String())
		}
	}
	plan.Steps = []wfapi.RolloutPlanStep{}
	for _, s := range planned {
		plan.Steps = append(plan.Steps, wfapi.RolloutPlanStep{Step: s.Step, Want: s.Want, Pools: s.Pools})
	}
	return plan
}
