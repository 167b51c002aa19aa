package starter

import (
	"context"
	"fmt"
	"io"
	"strings"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/rolloutplan"
	"ate.dev/orchestrator/internal/wfapi"
)

// PreviewResult is what `ate-starter preview` prints: the pools each step
// of a config's rollout would move, and the pools that would move off it if
// it lost the annotation. It reads; it moves nothing.
type PreviewResult struct {
	Config string `json:"config"`
	Class  string `json:"class"`
	// Default says the config is its class's newest default now: Plan is
	// then its rollout from where it stands, else the rollout it would
	// run if it became the default (all at once without spec.rollout).
	Default bool              `json:"default"`
	Plan    wfapi.RolloutPlan `json:"plan"`
	// Back are the pools on the config that would move to BackTo (the
	// class default without it; "" when there is none, and they stay) if
	// it lost the annotation.
	Back   []string `json:"back"`
	BackTo string   `json:"backTo,omitempty"`
	// Pause is each step's bake time, as spec.rollout gives it.
	Pause []string `json:"pause,omitempty"`
}

// Preview computes a config's preview from r (a live client or a cache).
func Preview(ctx context.Context, r ctrlclient.Reader, name string) (*PreviewResult, error) {
	var c v1alpha1.SandboxConfig
	if err := r.Get(ctx, ctrlclient.ObjectKey{Name: name}, &c); err != nil {
		return nil, fmt.Errorf("reading SandboxConfig %q: %w", name, err)
	}
	configs, err := poolwatch.ListConfigs(ctx, r)
	if err != nil {
		return nil, err
	}
	pools, err := rollout.ClassPools(ctx, r, c.Class())
	if err != nil {
		return nil, err
	}
	plain := rollout.Plain(pools)
	res := &PreviewResult{Config: name, Class: string(c.Class()), Back: []string{}}
	ending, _ := rollout.Liveness(&c, resolve.NewestDefault(c.Class(), configs))
	res.Default = ending == "" || ending == v1alpha1.RolloutCompleted
	what := c.DeepCopy()
	if !res.Default {
		// As it would start: nothing admitted but the pools on it.
		what.Status.Rollout = nil
	}
	res.Plan = rolloutplan.Of(what, plain)
	if c.Spec.Rollout != nil {
		for _, s := range c.Spec.Rollout.Steps {
			pause := ""
			if s.Pause != nil {
				pause = s.Pause.Duration.String()
			}
			res.Pause = append(res.Pause, pause)
		}
	}
	var others []resolve.Config
	for _, o := range configs {
		if o.Name != name {
			others = append(others, o)
		}
	}
	res.BackTo = resolve.NewestDefault(c.Class(), others)
	if res.BackTo != "" {
		for _, p := range plain {
			if p.Current == name {
				res.Back = append(res.Back, p.Key.String())
			}
		}
	}
	return res, nil
}

// Print writes the preview for a person.
func (p *PreviewResult) Print(w io.Writer) {
	if p.Default {
		fmt.Fprintf(w, "SandboxConfig %s is the %s default; its rollout (%s, step %d) from here, over %d unpinned pools:\n",
			p.Config, p.Class, orNone(p.Plan.Phase), p.Plan.Step, p.Plan.Total)
	} else {
		fmt.Fprintf(w, "SandboxConfig %s is not the %s default; if it became the default, over %d unpinned pools:\n",
			p.Config, p.Class, p.Plan.Total)
	}
	fmt.Fprintf(w, "  admitted already (%d): %s\n", len(p.Plan.Admitted), strings.Join(p.Plan.Admitted, " "))
	for _, s := range p.Plan.Steps {
		pause := ""
		if i := int(s.Step) - 1; i >= 0 && i < len(p.Pause) && p.Pause[i] != "" {
			pause = ", then bake " + p.Pause[i]
		}
		fmt.Fprintf(w, "  step %d: %d on it once done%s; moves %d: %s\n", s.Step, s.Want, pause, len(s.Pools), strings.Join(s.Pools, " "))
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
