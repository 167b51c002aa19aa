package rolloutplan

import (
	"fmt"
	"io"
	"strings"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

// Preview is what `starter preview` and `kubectl ate rollout preview`
// print: the pools each step of a config's rollout would move, and the
// pools that would move off it if it lost the annotation. Computing it
// reads; it moves nothing.
type Preview struct {
	Config string `json:"config"`
	Class  string `json:"class"`
	// Source names where the config was read from when it is not the
	// cluster's object (a file not applied yet); "" for the cluster's.
	Source string `json:"source,omitempty"`
	// Default says the config is its class's newest default now: Plan is
	// then its rollout from where it stands, else the rollout it would
	// run if it became the default (all at once without spec.rollout).
	Default bool `json:"default"`
	Plan    Plan `json:"plan"`
	// Back are the pools on the config that would move to BackTo (the
	// class default without it; "" when there is none, and they stay) if
	// it lost the annotation.
	Back   []string `json:"back"`
	BackTo string   `json:"backTo,omitempty"`
	// Pause is each step's bake time, as spec.rollout gives it.
	Pause []string `json:"pause,omitempty"`
	// Approval is each step's approval, as spec.rollout gives it.
	Approval []bool `json:"approval,omitempty"`
}

// PreviewOf is the preview of config c over configs (every SandboxConfig
// of the cluster; c's own entry, if any, is replaced by c, so that a config
// read from a file is previewed as if applied) and pools (the class's
// unpinned pools, in rollout order). It is pure.
func PreviewOf(c *v1alpha1.SandboxConfig, configs []resolve.Config, pools []rollout.Pool) *Preview {
	all := []resolve.Config{resolve.ConfigFrom(c)}
	for _, o := range configs {
		if o.Name != c.Name {
			all = append(all, o)
		}
	}
	res := &Preview{Config: c.Name, Class: string(c.Class()), Back: []string{}}
	ending, _ := rollout.Liveness(c, resolve.NewestDefault(c.Class(), all))
	res.Default = ending == "" || ending == v1alpha1.RolloutCompleted
	what := c.DeepCopy()
	if !res.Default {
		// As it would start: nothing admitted but the pools on it.
		what.Status.Rollout = nil
	}
	res.Plan = Of(what, pools)
	if c.Spec.Rollout != nil {
		for _, s := range c.Spec.Rollout.Steps {
			pause := ""
			if s.Pause != nil {
				pause = s.Pause.Duration.String()
			}
			res.Pause = append(res.Pause, pause)
			res.Approval = append(res.Approval, s.Approval)
		}
	}
	// all[0] is c: the class default without it is the newest of the rest.
	res.BackTo = resolve.NewestDefault(c.Class(), all[1:])
	if res.BackTo != "" {
		for _, p := range pools {
			if p.Current == c.Name {
				res.Back = append(res.Back, p.Key.String())
			}
		}
	}
	return res
}

// Print writes the preview for a person.
func (p *Preview) Print(w io.Writer) {
	name := p.Config
	if p.Source != "" {
		name = fmt.Sprintf("%s (from %s, as if applied)", p.Config, p.Source)
	}
	if p.Default {
		fmt.Fprintf(w, "SandboxConfig %s is the %s default; its rollout (%s, step %d) from here, over %d unpinned pools:\n",
			name, p.Class, orNone(p.Plan.Phase), p.Plan.Step, p.Plan.Total)
	} else {
		fmt.Fprintf(w, "SandboxConfig %s is not the %s default; if it became the default, over %d unpinned pools:\n",
			name, p.Class, p.Plan.Total)
	}
	fmt.Fprintf(w, "  admitted already (%d): %s\n", len(p.Plan.Admitted), strings.Join(p.Plan.Admitted, " "))
	for _, s := range p.Plan.Steps {
		then := ""
		if i := int(s.Step) - 1; i >= 0 && i < len(p.Approval) && p.Approval[i] {
			then += ", then wait for approval"
		}
		if i := int(s.Step) - 1; i >= 0 && i < len(p.Pause) && p.Pause[i] != "" {
			then += ", then bake " + p.Pause[i]
		}
		fmt.Fprintf(w, "  step %d: %d on it once done%s; moves %d: %s\n", s.Step, s.Want, then, len(s.Pools), strings.Join(s.Pools, " "))
	}
	switch {
	case p.BackTo == "":
		fmt.Fprintf(w, "If it lost the annotation: no other %s default; its pools would stay.\n", p.Class)
	default:
		fmt.Fprintf(w, "If it lost the annotation: %d pools would move to %s at once: %s\n", len(p.Back), p.BackTo, strings.Join(p.Back, " "))
	}
}

func orNone(s string) string {
	if s == "" {
		return "not started"
	}
	return s
}
