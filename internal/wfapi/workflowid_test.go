package wfapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseWorkflowID(t *testing.T) {
	c := testCluster
	tests := []struct {
		name string
		id   string
		want WorkflowRef // ID is the case's
	}{
		{name: "a switch", id: c.SwitchWorkflowID("ns", "pool"),
			want: WorkflowRef{Cluster: c, Kind: KindSwitch, Pool: PoolRef{Namespace: "ns", Name: "pool"}}},
		{name: "a release", id: c.ReleaseWorkflowID("gvisor-v2"),
			want: WorkflowRef{Cluster: c, Kind: KindRelease, Config: "gvisor-v2"}},
		{name: "a rollout", id: c.RolloutWorkflowID("gvisor-v2"),
			want: WorkflowRef{Cluster: c, Kind: KindRollout, Config: "gvisor-v2"}},
		{name: "the operator", id: c.OperatorWorkflowID(), want: WorkflowRef{Cluster: c, Kind: KindOperator}},
		{name: "a cluster that is a UID", id: Cluster("5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab").SwitchWorkflowID("ns", "p"),
			want: WorkflowRef{Cluster: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab", Kind: KindSwitch, Pool: PoolRef{Namespace: "ns", Name: "p"}}},
		// The config is whatever lies between the prefix and the kind's
		// suffix, as the ID builders put it there.
		{name: "a release of a config named like a rollout", id: c.ReleaseWorkflowID("x/rollout"),
			want: WorkflowRef{Cluster: c, Kind: KindRelease, Config: "x/rollout"}},
		{name: "a rollout of a config named like a release", id: c.RolloutWorkflowID("x/release"),
			want: WorkflowRef{Cluster: c, Kind: KindRollout, Config: "x/release"}},
		{name: "a release of no config", id: "c1/sandboxconfig//release", want: WorkflowRef{Cluster: c, Kind: KindRelease}},
		// Of the cluster, of no kind: ClusterGuard lets them by, no
		// caller check does.
		{name: "a rollout's gate", id: c.RolloutWorkflowID("cfg") + "/gate/1-0", want: WorkflowRef{Cluster: c}},
		{name: "a numbered switch ID", id: "c1/workerpool/ns/pool/switch/3", want: WorkflowRef{Cluster: c}},
		{name: "a pool ID", id: "c1/workerpool/ns/pool", want: WorkflowRef{Cluster: c}},
		{name: "another workflow of a pool", id: "c1/workerpool/ns/pool/attack", want: WorkflowRef{Cluster: c}},
		{name: "a switch with no namespace", id: "c1/workerpool//pool/switch", want: WorkflowRef{Cluster: c}},
		{name: "a switch with no name", id: "c1/workerpool/ns//switch", want: WorkflowRef{Cluster: c}},
		{name: "a switch whose name has a slash", id: "c1/workerpool/ns/a/b/switch", want: WorkflowRef{Cluster: c}},
		{name: "a config with no kind", id: "c1/sandboxconfig/cfg", want: WorkflowRef{Cluster: c}},
		// No cluster: nothing else is read.
		{name: "no cluster", id: "workerpool/ns/pool/switch"},
		{name: "a cluster that is no DNS label", id: "Prod/workerpool/ns/pool/switch"},
		{name: "another shape after the cluster", id: "c1/other/ns/pool/switch"},
		{name: "the operator under another name", id: "c1/operator/x"},
		{name: "a replayer's ID", id: "ReplayId"},
		{name: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.ID = tt.id
			require.Equal(t, want, ParseWorkflowID(tt.id))
		})
	}
}

// The v0.1.0 parsers, as released: the workflows decide on them, so the
// parse they are built on now must decide the same for every ID and input
// (FuzzWorkflowChecksAsInV010 looks for one that does not).

func v010SwitchPool(id string, named PoolRef) (PoolRef, error) {
	ns, name, ok := func() (string, string, bool) {
		cluster, found := ClusterOf(id)
		if !found {
			return "", "", false
		}
		rest, found := strings.CutPrefix(id, string(cluster)+"/workerpool/")
		if !found {
			return "", "", false
		}
		rest, found = strings.CutSuffix(rest, "/switch")
		if !found {
			return "", "", false
		}
		namespace, name, found := strings.Cut(rest, "/")
		if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
			return "", "", false
		}
		return namespace, name, true
	}()
	if !ok {
		return PoolRef{}, fmt.Errorf("a switch's workflow ID names its cluster and pool, as %s does; got %q",
			Cluster("<cluster>").SwitchWorkflowID("<namespace>", "<name>"), id)
	}
	if named.Namespace != "" && (named.Namespace != ns || named.Name != name) {
		return PoolRef{}, fmt.Errorf("switch workflow of WorkerPool %s was given WorkerPool %s",
			PoolKey(ns, name), named)
	}
	named.Namespace, named.Name = ns, name
	return named, nil
}

func v010CheckReleaseID(id, config string) error {
	cluster, ok := ClusterOf(id)
	if !ok || id != cluster.ReleaseWorkflowID(config) {
		return fmt.Errorf("the release workflow of SandboxConfig %q has the ID %s; got %q",
			config, Cluster("<cluster>").ReleaseWorkflowID(config), id)
	}
	return nil
}

func v010CheckRolloutID(id, config string) error {
	cluster, ok := ClusterOf(id)
	if !ok || config == "" || id != cluster.RolloutWorkflowID(config) {
		return fmt.Errorf("the rollout workflow of SandboxConfig %q has the ID %s; got %q",
			config, Cluster("<cluster>").RolloutWorkflowID(config), id)
	}
	return nil
}

// requireSameAsV010 checks SwitchPool, CheckReleaseID and CheckRolloutID
// against their v0.1.0 selves on one ID and one input: the same result,
// the same error message.
func requireSameAsV010(t *testing.T, id, ns, name, config string) {
	t.Helper()
	named := PoolRef{Namespace: ns, Name: name, UID: "u1"}
	got, err := SwitchPool(id, named)
	want, wantErr := v010SwitchPool(id, named)
	if got != want || errText(err) != errText(wantErr) {
		t.Fatalf("SwitchPool(%q, %v) = %v, %v; v0.1.0: %v, %v", id, named, got, err, want, wantErr)
	}
	if got, want := errText(CheckReleaseID(id, config)), errText(v010CheckReleaseID(id, config)); got != want {
		t.Fatalf("CheckReleaseID(%q, %q) = %s; v0.1.0: %s", id, config, got, want)
	}
	if got, want := errText(CheckRolloutID(id, config)), errText(v010CheckRolloutID(id, config)); got != want {
		t.Fatalf("CheckRolloutID(%q, %q) = %s; v0.1.0: %s", id, config, got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func FuzzWorkflowChecksAsInV010(f *testing.F) {
	c := testCluster
	ids := []string{
		c.SwitchWorkflowID("ns", "pool"), c.SwitchWorkflowID("ns", "other"), c.ReleaseWorkflowID("cfg"),
		c.RolloutWorkflowID("cfg"), c.OperatorWorkflowID(), c.ReleaseWorkflowID(""), c.RolloutWorkflowID(""),
		c.ReleaseWorkflowID("x/rollout"), c.RolloutWorkflowID("x/release"), c.RolloutWorkflowID("cfg") + "/gate/1-0",
		"c1/sandboxconfig/release", "c1/sandboxconfig/rollout", "c1/sandboxconfig/", "c1/workerpool/ns/pool/switch/3",
		"c1/workerpool/ns/a/b/switch", "c1/workerpool//pool/switch", "c1/workerpool/ns//switch", "c1/workerpool/switch",
		"workerpool/ns/pool/switch", "Prod/sandboxconfig/cfg/release", "c1/operator/x", "ReplayId", "", "/", "c1/",
	}
	for _, id := range ids {
		for _, in := range [][3]string{{"ns", "pool", "cfg"}, {"", "", ""}, {"ns", "other", "x/rollout"}, {"other", "pool", "x/release"}, {"ns", "", "release"}} {
			f.Add(id, in[0], in[1], in[2])
		}
	}
	f.Fuzz(requireSameAsV010)
}

// TestWorkflowChecksAsInV010 compares the checks with their v0.1.0 selves
// on every ID of up to five segments drawn from the IDs' own words (a
// switch's has five) after a cluster, valid or not, and a few inputs each.
func TestWorkflowChecksAsInV010(t *testing.T) {
	words := []string{"", "workerpool", "sandboxconfig", "ns", "switch", "release", "rollout"}
	inputs := [][3]string{{"ns", "ns", "ns"}, {"", "", ""}, {"ns", "switch", "release"}, {"switch", "ns", "ns/release"}}
	checked := 0
	var ids func(id string, n int)
	ids = func(id string, n int) {
		for _, in := range inputs {
			requireSameAsV010(t, id, in[0], in[1], in[2])
			checked++
		}
		if n == 0 {
			return
		}
		for _, w := range words {
			ids(id+"/"+w, n-1)
		}
	}
	for _, cluster := range []string{"c1", "", "Prod"} {
		ids(cluster, 4)
	}
	require.Greater(t, checked, 30_000)
}
