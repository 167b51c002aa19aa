package wfapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSwitchStaticSummary(t *testing.T) {
	pool := PoolRef{Namespace: "ate-demo", Name: "counter", UID: "u1"}
	tests := []struct {
		name string
		in   SwitchInput
		want string
	}{
		{"a move", SwitchInput{Pool: pool, Class: "gvisor", From: "gvisor-default", To: "gvisor-default-v2"},
			`[c1] ate-demo/counter: gvisor "gvisor-default" → "gvisor-default-v2"`},
		{"a first resolution", SwitchInput{Pool: pool, Class: "gvisor", To: "gvisor-default"},
			`[c1] ate-demo/counter: gvisor → "gvisor-default"`},
		{"a stale claim", SwitchInput{Pool: pool, Class: "microvm", From: "a", Abandon: "b"},
			`[c1] ate-demo/counter: microvm: clear the stale claim on "b"`},
		{"an operator's re-resolution", SwitchInput{Pool: pool}, `[c1] ate-demo/counter: re-resolve on request`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, SwitchStaticSummary("c1", tt.in))
			require.NotContains(t, SwitchStaticSummary("c1", tt.in), "\n", "one line")
		})
	}
}

func TestSwitchStaticDetails(t *testing.T) {
	in := SwitchInput{Pool: PoolRef{Namespace: "ns", Name: "p", UID: "u1"}, Class: "gvisor", From: "a", To: "b",
		FromDeleting: true, Generation: 3, PoolResourceVersion: "42"}
	require.Equal(t, `- **WorkerPool**: ns/p
- **pool UID**: u1
- **sandbox class**: gvisor
- **from**: "a" (in deletion)
- **to**: "b"
- **planned on**: generation 3, resourceVersion 42
- **started by**: the starter: the pool's next move`, SwitchStaticDetails(in))
	require.Contains(t, SwitchStaticDetails(SwitchInput{Pool: in.Pool}), "an operator's re-resolution")
}

func TestCurrentDetails(t *testing.T) {
	s := SwitchState{Pool: "ns/p", Class: "gvisor", From: "a", To: "b", Step: "Claim"}
	require.Equal(t, "- **step**: Claim\n- **move**: gvisor \"a\" → \"b\"", s.Details())
	s.Step, s.Outcome = "done", OutcomeConfirmed
	require.Equal(t, "- **outcome**: confirmed\n- **move**: gvisor \"a\" → \"b\"", s.Details())
	require.Equal(t, "- **step**: deciding", SwitchState{Pool: "ns/p", Step: "deciding"}.Details())

	r := ReleaseState{Config: "c", Checks: 2, Outcome: OutcomeWaiting, UserCount: 3, Users: []string{"ns/a", "ns/b"}}
	require.Equal(t, "- **outcome**: waiting\n- **looks**: 2\n- **WorkerPools using it**: 3, e.g. ns/a, ns/b", r.Details())
}
