package wfapi

import (
	"strings"
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
		{name: "the starter's input", id: testCluster.SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "ate-demo", Name: "counter", UID: "u1"},
			want:  PoolRef{Namespace: "ate-demo", Name: "counter", UID: "u1"}},
		{name: "an operator's empty input", id: testCluster.SwitchWorkflowID("ate-demo", "counter"),
			want: PoolRef{Namespace: "ate-demo", Name: "counter"}},
		{name: "another pool's input", id: testCluster.SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "ate-demo", Name: "other"}, err: "was given WorkerPool ate-demo/other"},
		{name: "another namespace's input", id: testCluster.SwitchWorkflowID("ate-demo", "counter"),
			named: PoolRef{Namespace: "other", Name: "counter"}, err: "was given WorkerPool other/counter"},
		{name: "a release's ID", id: testCluster.ReleaseWorkflowID("gvisor-default"), err: "names its cluster and pool"},
		{name: "an ID with no cluster", id: "workerpool/ate-demo/counter/switch", err: "names its cluster and pool"},
		{name: "a cluster that is no DNS label", id: "Prod/workerpool/ate-demo/counter/switch", err: "names its cluster and pool"},
		{name: "a numbered switch ID", id: "c1/workerpool/ate-demo/counter/switch/3", err: "names its cluster and pool"},
		{name: "a pool ID", id: "c1/workerpool/ate-demo/counter", err: "names its cluster and pool"},
		{name: "no namespace", id: "c1/workerpool//counter/switch", err: "names its cluster and pool"},
		{name: "no name", id: "c1/workerpool/ate-demo//switch", err: "names its cluster and pool"},
		{name: "a name with a slash", id: "c1/workerpool/ate-demo/a/b/switch", err: "names its cluster and pool"},
		{name: "a replayer's ID", id: "ReplayId", err: "names its cluster and pool"},
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

const testCluster = Cluster("c1")

func TestClusterNames(t *testing.T) {
	c := Cluster("prod-eu-1")
	require.Equal(t, "prod-eu-1/workerpool/ate-demo/counter/switch", c.SwitchWorkflowID("ate-demo", "counter"))
	require.Equal(t, "prod-eu-1/sandboxconfig/gvisor-v2/release", c.ReleaseWorkflowID("gvisor-v2"))
	require.Equal(t, "prod-eu-1/operator", c.OperatorWorkflowID())
	require.Equal(t, "ate-orchestrator-prod-eu-1", c.DefaultTaskQueue())
	require.Equal(t, Scope{Cluster: c, TaskQueue: "ate-orchestrator-prod-eu-1"}, ScopeOf(c, ""))
	require.Equal(t, Scope{Cluster: c, TaskQueue: "mine"}, ScopeOf(c, "mine"))
	for _, id := range []string{c.SwitchWorkflowID("a", "b"), c.ReleaseWorkflowID("x"), c.OperatorWorkflowID()} {
		got, ok := ClusterOf(id)
		require.True(t, ok, id)
		require.Equal(t, c, got, id)
	}
}

func TestClusterOf(t *testing.T) {
	tests := []struct {
		id   string
		want Cluster
	}{
		{id: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab/workerpool/ns/p/switch", want: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"},
		{id: "a/operator", want: "a"},
		{id: "workerpool/ns/p/switch"},
		{id: "sandboxconfig/x/release"},
		{id: "a/b/workerpool/ns/p/switch"},
		{id: "operator"},
		{id: "a/"},
		{id: "/workerpool/ns/p/switch"},
		{id: "Prod/operator"},
		{id: "ate-orchestrator/operator", want: "ate-orchestrator"},
		{id: "a/operator/x"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, ok := ClusterOf(tt.id)
			require.Equal(t, tt.want != "", ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestClusterValidate(t *testing.T) {
	require.NoError(t, Cluster("prod-eu-1").Validate())
	require.NoError(t, Cluster("5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab").Validate())
	for _, bad := range []string{"", "Prod", "a/b", "a.b", "-a", strings.Repeat("a", 64)} {
		require.ErrorContains(t, Cluster(bad).Validate(), "is not a DNS label", bad)
	}
}

func TestCheckReleaseID(t *testing.T) {
	require.NoError(t, CheckReleaseID(testCluster.ReleaseWorkflowID("gvisor-v2"), "gvisor-v2"))
	require.ErrorContains(t, CheckReleaseID(testCluster.ReleaseWorkflowID("other"), "gvisor-v2"), `the release workflow of SandboxConfig "gvisor-v2" has the ID <cluster>/sandboxconfig/gvisor-v2/release`)
	require.Error(t, CheckReleaseID("sandboxconfig/gvisor-v2/release", "gvisor-v2"), "no cluster")
	require.Error(t, CheckReleaseID(testCluster.SwitchWorkflowID("ns", "gvisor-v2"), "gvisor-v2"))
}
