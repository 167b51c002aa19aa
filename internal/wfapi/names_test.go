package wfapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPoolFromSwitchWorkflowID(t *testing.T) {
	tests := []struct {
		id       string
		ns, name string
		ok       bool
	}{
		{id: PoolSwitchWorkflowID("ate-demo", "counter"), ns: "ate-demo", name: "counter", ok: true},
		{id: SwitchWorkflowID("ate-demo", "counter", 3)},
		{id: PoolWorkflowID("ate-demo", "counter")},
		{id: ReleaseWorkflowID("gvisor-default")},
		{id: "workerpool//counter/switch"},
		{id: "workerpool/ate-demo//switch"},
		{id: "workerpool/ate-demo/a/b/switch"},
		{id: "ReplayId"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			ns, name, ok := PoolFromSwitchWorkflowID(tt.id)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.ns, ns)
			require.Equal(t, tt.name, name)
		})
	}
}

func TestSwitchInputShape(t *testing.T) {
	require.True(t, SwitchInput{}.IsLean(), "an operator's start carries no input")
	require.True(t, SwitchInput{Lean: true, To: "x"}.IsLean())
	require.False(t, SwitchInput{Pool: PoolRef{Namespace: "ns", Name: "p"}, To: "x"}.IsLean(), "a pool workflow's child")
	require.False(t, SwitchInput{}.IsMove())
	require.True(t, SwitchInput{Abandon: "x"}.IsMove())
}
