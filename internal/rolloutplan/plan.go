// Package rolloutplan is the plan of a config's staged rollout over its
// class's pools: what the rollout workflow answers its plan query with, and
// what every preview (the starter's, the kubectl plugin's) shows. Both
// processes and the plugin import it; Of and PreviewOf are pure, and
// ReadPreview reads what PreviewOf needs from a client.
package rolloutplan

import (
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// Of is the plan of a config's rollout over pools (in rollout order):
// the pools admitted so far, and those each remaining step would admit.
// A config without spec.rollout moves every pool in one step.
func Of(c *v1alpha1.SandboxConfig, pools []rollout.Pool) Plan {
	steps := []v1alpha1.RolloutStep{{}}
	if c.Spec.Rollout != nil {
		steps = c.Spec.Rollout.Steps
	}
	plan := Plan{Config: c.Name, Total: len(pools), Moved: []string{}}
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
	plan.Steps = []Step{}
	for _, s := range planned {
		plan.Steps = append(plan.Steps, Step{Step: s.Step, Want: s.Want, Pools: s.Pools})
	}
	return plan
}

// Plan is the answer of the rollout workflow's plan query and of a preview: the pools
// of each step, "namespace/name", in rollout order.
type Plan struct {
	Config  string `json:"config"`
	Phase   string `json:"phase,omitempty"`
	Step    int32  `json:"step"`
	Message string `json:"message,omitempty"`
	// Paused and Halted hold the rollout (the query's answer: the
	// workflow's own state, which a status write follows).
	Paused bool `json:"paused,omitempty"`
	Halted bool `json:"halted,omitempty"`
	// Total is the number of unpinned pools of the class.
	Total int `json:"total"`
	// Admitted are the pools the rollout admitted before Steps (on the
	// config, or admitted by an earlier step).
	Admitted []string `json:"admitted"`
	// Moved are the pools on the config.
	Moved []string `json:"moved"`
	// Done are the steps taken, with the pools each admitted; Steps the
	// steps to come, as the pools stand now.
	Done  []Step `json:"done,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one step of a plan.
type Step struct {
	Step int32 `json:"step"`
	// Want is how many pools are on the config once the step is done.
	Want  int      `json:"want"`
	Pools []string `json:"pools"`
}
