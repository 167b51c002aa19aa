package wfapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSwitchPool(t *testing.T) {
	tests := []struct {
		name  string
		id    string
		named PoolRef
		want  PoolRef
		err   string
	}{
		{name: "the starter's input", id: SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "ate-demo", Name: "counter", UID: "u1"},
			want:  PoolRef{Namespace: "ate-demo", Name: "counter", UID: "u1"}},
		{name: "an operator's empty input", id: SwitchWorkflowID("ate-demo", "counter"),
			want: PoolRef{Namespace: "ate-demo", Name: "counter"}},
		{name: "another pool's input", id: SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "ate-demo", Name: "other"}, err: "was given WorkerPool ate-demo/other"},
		{name: "another namespace's input", id: SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "other", Name: "counter"}, err: "was given WorkerPool other/counter"},
		{name: "a release's ID", id: ReleaseWorkflowID("gvisor-default"), err: "names its pool"},
		{name: "a numbered switch ID", id: "workerpool/ate-demo/counter/switch/3", err: "names its pool"},
		{name: "a pool ID", id: "workerpool/ate-demo/counter", err: "names its pool"},
		{name: "no namespace", id: "workerpool//counter/switch", err: "names its pool"},
		{name: "no name", id: "workerpool/ate-demo//switch", err: "names its pool"},
		{name: "a name with a slash", id: "workerpool/ate-demo/a/b/switch", err: "names its pool"},
		{name: "a replayer's ID", id: "ReplayId", err: "names its pool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SwitchPool(tt.id, tt.named)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSwitchInputIsMove(t *testing.T) {
	require.False(t, SwitchInput{}.IsMove(), "an operator's start carries no input")
	require.True(t, SwitchInput{To: "x"}.IsMove())
	require.True(t, SwitchInput{Abandon: "x"}.IsMove())
}
