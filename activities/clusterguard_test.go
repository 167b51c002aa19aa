package activities

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/internal/wfapi"
)

func TestCheckCluster(t *testing.T) {
	const a, b = wfapi.Cluster("cluster-a"), wfapi.Cluster("cluster-b")
	tests := []struct {
		name string
		id   string
		err  string
	}{
		{name: "its own switch", id: a.SwitchWorkflowID("ns", "p")},
		{name: "its own release", id: a.ReleaseWorkflowID("c")},
		{name: "its own operator workflow", id: a.OperatorWorkflowID()},
		{name: "another cluster's switch", id: b.SwitchWorkflowID("ns", "p"),
			err: `workflow "cluster-b/workerpool/ns/p/switch" belongs to cluster "cluster-b": the worker of cluster "cluster-a" refuses its step Claim`},
		{name: "another cluster's release", id: b.ReleaseWorkflowID("c"), err: `belongs to cluster "cluster-b"`},
		{name: "an ID with no cluster", id: "workerpool/ns/p/switch",
			err: `workflow "workerpool/ns/p/switch" names no cluster: the worker of cluster "cluster-a" refuses its step Claim`},
		{name: "an ID of one segment", id: "ReplayId", err: "names no cluster"},
		{name: "a cluster that is a prefix of the worker's", id: wfapi.Cluster("cluster").SwitchWorkflowID("ns", "p"), err: `belongs to cluster "cluster"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCluster(a, tt.id, "Claim")
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app))
			require.True(t, app.NonRetryable(), "no retry on this worker can help")
			require.Equal(t, ErrForeignCluster, app.Type())
		})
	}
}

// BenchmarkCheckCluster is the guard's cost per step (decisions/0010).
func BenchmarkCheckCluster(b *testing.B) {
	c := wfapi.Cluster("5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab")
	id := c.SwitchWorkflowID("ate-demo", "counter")
	for b.Loop() {
		if err := CheckCluster(c, id, "Claim"); err != nil {
			b.Fatal(err)
		}
	}
}
