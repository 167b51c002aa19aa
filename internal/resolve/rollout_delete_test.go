package resolve

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// TestClassRollingOutKeepsAConfigInDeletion: an unpinned class on a config
// of its class in deletion that still carries the protection finalizer
// stays on it, Resolved, until the rolling-out default admits its pool; it
// never moves to an older default meanwhile. Only a class with nothing it
// may keep (a new pool, a config gone, unprotected, or of another class)
// falls back to the previous default.
func TestClassRollingOutKeepsAConfigInDeletion(t *testing.T) {
	oldest := Config{Name: "oldest", Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: 50}
	old := Config{Name: "old", Class: gvisor, ClassDefault: true, Deleting: true, Protected: true, CreatedUnix: 100}
	unprotected := old
	unprotected.Protected = false
	otherClass := old
	otherClass.Class = microvm
	formerPin := Config{Name: "pin", Class: gvisor, Deleting: true, Protected: true, CreatedUnix: 150}
	through := &rollout.PoolKey{Namespace: "ns", Name: "b"}
	staged := func(through *rollout.PoolKey, step int32) Config {
		return Config{Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200,
			Rollout: &rollout.Admission{Step: step, Through: through}}
	}
	// superseded is a default whose rollout a newer one superseded: it
	// keeps its admission (which admits every pool here).
	superseded := Config{Name: "mid", Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: 170,
		Rollout: &rollout.Admission{Step: 2, Through: &rollout.PoolKey{Namespace: "zz", Name: "zz"}}}
	p := func(name string) Pool { return Pool{Namespace: "ns", Name: name} }
	stays := func(cur string) Result {
		return Result{Class: gvisor, Target: cur, Resolved: true, Reason: v1alpha1.ReasonResolved, Message: WaitingDeletingMessage(cur, "new")}
	}
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
		configs []Config
		want    Result
	}{
		{"not admitted: stays on its config in deletion", p("z"), "old", []Config{old, staged(through, 1)}, stays("old")},
		{"not admitted: never back to an older default", p("z"), "old", []Config{oldest, old, staged(through, 1)}, stays("old")},
		{"not started: stays", p("a"), "old", []Config{oldest, old, staged(nil, 0)}, stays("old")},
		{"admitted: moves to the rolling default", p("a"), "old", []Config{oldest, old, staged(through, 1)}, moving},
		{"a former pin in deletion is kept too", p("z"), "pin", []Config{oldest, formerPin, staged(through, 1)}, stays("pin")},
		{"not back to a superseded default either", p("z"), "old", []Config{oldest, old, superseded, staged(through, 1)}, stays("old")},
		{"without a rollout: moves at once", p("z"), "old",
			[]Config{oldest, old, {Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200}}, moving},
		{"unprotected: takes the previous default", p("z"), "old", []Config{oldest, unprotected, staged(through, 1)}, waiting("oldest")},
		{"unprotected with no other default: takes the rolling one", p("z"), "old", []Config{unprotected, staged(through, 1)}, moving},
		{"of another class: takes the previous default", p("z"), "old", []Config{oldest, otherClass, staged(through, 1)}, waiting("oldest")},
		{"config gone: takes the previous default", p("z"), "old", []Config{oldest, staged(through, 1)}, waiting("oldest")},
		{"a new pool takes the previous default", p("z"), "", []Config{oldest, old, staged(through, 1)}, waiting("oldest")},
		{"a new pool with no other default takes the rolling one", p("z"), "", []Config{old, staged(through, 1)}, moving},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Class(tt.pool, unpinned(gvisor), tt.current, tt.configs))
		})
	}
}

// TestNextMoveLeavesAWaitingPoolOnItsConfigInDeletion: the pool a rollout
// has not admitted needs no switch (no move backwards either), and the one
// it admitted moves off the config in deletion.
func TestNextMoveLeavesAWaitingPoolOnItsConfigInDeletion(t *testing.T) {
	configs := []Config{
		{Name: "oldest", Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: 50},
		{Name: "old", Class: gvisor, ClassDefault: true, Deleting: true, Protected: true, CreatedUnix: 100},
		{Name: "new", Class: gvisor, ClassDefault: true, CreatedUnix: 200,
			Rollout: &rollout.Admission{Step: 1, Canaries: []string{"ns/canary"}}},
	}
	spec := []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)}
	status := &v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{
		{Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"}},
	}}
	_, moves := NextMove(Pool{Namespace: "ns", Name: "other"}, spec, status, configs)
	require.False(t, moves, "a pool the rollout has not admitted stays on its config in deletion")
	m, moves := NextMove(Pool{Namespace: "ns", Name: "canary", Canary: true}, spec, status, configs)
	require.True(t, moves)
	require.Equal(t, Move{Class: gvisor, From: "old", To: "new", FromDeleting: true}, m)
}
