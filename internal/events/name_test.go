package events

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/wfapi"
)

// TestName pins the names of released events: a name spelled another way
// would record again an event that a retry (or the pool keeper, for a
// switch's Warning) must find. The wanted names were made by the recorders
// this package replaced (internal/poolevents.Name, the activities'
// RecordRolloutEvent and DeletingWarningName).
func TestName(t *testing.T) {
	pool := Pool(wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"})
	long := strings.Repeat("p", 253)
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"a pool's event", Name(pool, "switch/run-1"), "p.321d2615b896b4bc"},
		{"the same event of another incarnation", Name(Pool(wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-2"}), "switch/run-1"), "p.369a73a4762fc54c"},
		{"a pool's event does not depend on its namespace", Name(Pool(wfapi.PoolRef{Namespace: "other", Name: "p", UID: "uid-1"}), "switch/run-1"), "p.321d2615b896b4bc"},
		{"a long pool name is cut to 200 characters", Name(Pool(wfapi.PoolRef{Name: long, UID: "u"}), "k"), long[:200] + ".bda0adc1cb9a3355"},
		{"a rollout's event about its config", Name(Config("new", "uid-c"), "run-1/event/3"), "new.32a19fc50c577fa9"},
		{"the Warning of a config in deletion", Name(Config("old", "uid-c"), "deleting/rollout/new/2"), "old.516e0c9c582e70d4"},
		{"a config's name is not cut", Name(Config(strings.Repeat("c", 230), "u"), "k"), strings.Repeat("c", 230) + ".642f2318ae4d3007"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got)
		})
	}
}

// TestNameFitsAnObjectName: a pool's name is cut so its event's name stays
// a valid object name, whatever the pool's name.
func TestNameFitsAnObjectName(t *testing.T) {
	n := Name(Pool(wfapi.PoolRef{Name: strings.Repeat("p", 253), UID: "u"}), "k")
	require.LessOrEqual(t, len(n), 253)
}
