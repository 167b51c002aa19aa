package kubectlate_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestList: one line per config with a rollout (spec.rollout or a status a
// rollout wrote), sorted by name within a class; none for a config with
// neither.
func TestList(t *testing.T) {
	halted := newConfig(t, true, step(1), step(2))
	setRollout(t, halted.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutHalted, Step: 2, MovedPools: 1, TotalPools: 2,
		Message: "step 2: " + strings.Repeat("pool a/b is not Available; ", 10)})
	notStarted := newConfig(t, false, step(1))
	stopped := newConfig(t, false) // spec.rollout removed since: its status stays
	setRollout(t, stopped.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutStopped, Step: 1, MovedPools: 2, TotalPools: 2, Message: "spec.rollout was removed"})
	plain := newConfig(t, true)

	res := run(t, "rollout", "list")
	require.Equal(t, 0, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Regexp(t, `^NAME\s+CLASS\s+PHASE\s+STEP\s+MOVED/TOTAL\s+AGE\s+MESSAGE$`, lines[0])
	rows := map[string]string{}
	var names []string
	for _, l := range lines[1:] {
		name := strings.Fields(l)[0]
		rows[name] = l
		names = append(names, name)
	}
	require.IsIncreasing(t, names, "sorted by name (every config here is gvisor)")
	require.NotContains(t, rows, plain.Name, "no rollout: not listed")
	require.Regexp(t, `^`+halted.Name+`\s+gvisor\s+Halted\s+2/2\s+1/2\s+\S+\s+step 2: pool a/b is not Available;.*…$`, rows[halted.Name])
	require.Regexp(t, `^`+notStarted.Name+`\s+gvisor\s+NotDefault\s+0/1\s+-\s+\S+\s+no rollout runs`, rows[notStarted.Name])
	require.Regexp(t, `^`+stopped.Name+`\s+gvisor\s+Stopped\s+1\s+2/2\s+\S+\s+spec.rollout was removed$`, rows[stopped.Name])
	require.LessOrEqual(t, len([]rune(regexp.MustCompile(`step 2: .*`).FindString(rows[halted.Name]))), 80)
}
