package resolve

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// TestClassRollingOut: an unpinned class whose newest default rolls out in
// stages moves only once the rollout admits its pool; until then it stays,
// Resolved, on its config.
func TestClassRollingOut(t *testing.T) {
	old := Config{Name: "old", Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: 100}
	staged := func(through *rollout.PoolKey, step int32) Config {
		return Config{Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200,
			Rollout: &rollout.Admission{Step: step, Through: through}}
	}
	pinnedCfg := Config{Name: "pinned", Class: gvisor, Protected: true, CreatedUnix: 50}
	p := func(name string) Pool { return Pool{Namespace: "ns", Name: name} }
	through := &rollout.PoolKey{Namespace: "ns", Name: "b"}
	// A pool the rollout has not reached keeps the message it had: the
	// rollout writes nothing to it, step after step.
	waiting := func(cur string) Result {
		return Result{Class: gvisor, Target: cur, Resolved: true, Reason: v1alpha1.ReasonResolved, Message: ResolvedMessage(cur)}
	}
	moving := Result{Class: gvisor, Target: "new", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "new"`}
	tests := []struct {
		name    string
		pool    Pool
		current string
		pinned  bool
		configs []Config
		want    Result
	}{
		{"not started: stays", p("a"), "old", false, []Config{old, staged(nil, 0)}, waiting("old")},
		{"admitted: moves", p("a"), "old", false, []Config{old, staged(through, 1)}, moving},
		{"the last admitted pool moves", p("b"), "old", false, []Config{old, staged(through, 1)}, moving},
		{"beyond the admitted: stays", p("c"), "old", false, []Config{old, staged(through, 2)}, waiting("old")},
		{"an admitted canary is before every other", Pool{Namespace: "zz", Name: "z", Canary: true}, "old", false,
			[]Config{old, {Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200,
				Rollout: &rollout.Admission{Step: 1, Canaries: []string{"zz/z"}, Through: through}}}, moving},
		{"on the rolling config: stays on it", p("z"), "new", false, []Config{old, staged(nil, 1)}, moving},
		{"a new pool takes the previous default", p("z"), "", false, []Config{old, staged(through, 1)}, waiting("old")},
		{"a new pool with no other default takes the rolling one", p("z"), "", false, []Config{staged(nil, 0)}, moving},
		{"an unpinned pool stays on its former pin", p("z"), "pinned", false, []Config{pinnedCfg, old, staged(through, 1)}, waiting("pinned")},
		{"a pool on a config in deletion without the finalizer takes the previous default", p("z"), "gone", false,
			[]Config{{Name: "gone", Class: gvisor, Deleting: true}, old, staged(through, 1)}, waiting("old")},
		{"a pinned pool is not affected", p("z"), "old", true, []Config{pinnedCfg, old, staged(nil, 0)},
			Result{Class: gvisor, Target: "pinned", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "pinned"`}},
		{"aborted: an admitted pool on the rolling config goes back to the previous default", p("a"), "new", false,
			[]Config{old, {Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200, Rollout: &rollout.Admission{Step: 2, Aborted: true}}},
			Result{Class: gvisor, Target: "old", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: AbortedMessage("old", "new", 2)}},
		{"aborted: a pool not moved yet stays", p("c"), "old", false,
			[]Config{old, {Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200, Rollout: &rollout.Admission{Step: 2, Aborted: true}}},
			waiting("old")},
		{"aborted with no other default: the pool stays on the rolling config", p("a"), "new", false,
			[]Config{{Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200, Rollout: &rollout.Admission{Step: 2, Aborted: true}}}, moving},
		{"a completed rollout is an ordinary default", p("z"), "old", false,
			[]Config{old, {Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200}}, moving},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := unpinned(gvisor)
			if tt.pinned {
				entry = pinnedTo(gvisor, "pinned")
			}
			require.Equal(t, tt.want, Class(tt.pool, entry, tt.current, tt.configs))
		})
	}
}
