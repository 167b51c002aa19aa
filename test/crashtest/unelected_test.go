package crashtest

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// switchedFrom parses a "switched from X to Y" event.
var switchedFrom = regexp.MustCompile(`switched from SandboxConfig "([^"]+)" to "([^"]+)"`)

// TestTwoStartersTwoWorkersUnelected: two starters and two workers, none
// leader-elected (LEADER_ELECT unset, its default false: a Deployment
// scaled to two with the setting lost, or a partitioned leader that has not
// yet noticed losing its Lease). Both starters start every switch and
// release from their own informers and both workers run the pool keeper.
// A burst of moves over fourteen pools in two namespaces (a new class
// default, then, while that wave is in flight, a newer one, two re-pins and
// the deletion of the first default) must end with 0 violations and each
// move's SandboxConfigSwitched once (the checker's P4), and the histories
// must show the switch runs started by both starters and no one else.
func TestTwoStartersTwoWorkersUnelected(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	prefix := "ue" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	tq := testenv.TaskQueue(t)
	scope := Scope{Namespaces: []string{ns1, ns2}, Configs: prefixed(prefix), TaskQueues: []string{tq}}
	var workers, starters [2]*process
	for i := range 2 {
		workers[i] = newProcess(t, "worker", tq, "")
		starters[i] = newProcess(t, "starter", tq, "")
		workers[i].Start()
		starters[i].Start()
	}

	gv := v1alpha1.SandboxClassGVisor
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("d1"), true)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("pa"), false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("pb"), false)))
	type poolRef struct{ ns, name string }
	var moving []poolRef
	for i := range 12 {
		p := poolRef{[]string{ns1, ns2}[i%2], fmt.Sprintf("g%d", i)}
		moving = append(moving, p)
		require.NoError(t, kube.Create(ctx, newPool(p.ns, p.name, gv, "")))
	}
	pinned := []poolRef{{ns1, "pinned"}, {ns2, "pinned"}}
	for _, p := range pinned {
		require.NoError(t, kube.Create(ctx, newPool(p.ns, p.name, gv, cfg("pa"))))
	}
	settle(t, chk, scope)

	// The burst: a new default; once a switch of its wave has claimed, a
	// newer default, the re-pins and the first default's deletion.
	mark := chk.Mark()
	createAfterOthers(t, kube, gvisorConfig(cfg("d2"), true))
	awaitCtx, cancel := context.WithTimeout(ctx, stepBound)
	defer cancel()
	_, err := chk.Await(awaitCtx, mark, func(r *Record) bool { return pendingClaim(ns1)(r) || pendingClaim(ns2)(r) })
	require.NoError(t, err, "no switch claimed %s", cfg("d2"))
	createAfterOthers(t, kube, gvisorConfig(cfg("d3"), true))
	for _, p := range pinned {
		require.NoError(t, patchPool(ctx, kube, p.ns, p.name, pin(cfg("pb"))))
	}
	require.NoError(t, kube.Delete(ctx, gvisorConfig(cfg("d1"), false)))

	rep := requireSound(t, chk, scope)
	require.True(t, rep.Converged)
	// Each move's event once: a pool's events are "uses" its first config,
	// then a chain of switches, each from the config the previous one
	// moved to, ending on the config its spec asks for.
	chain := func(p poolRef, first, last string) {
		t.Helper()
		evs := switchedEvents(t, p.ns, p.name)
		require.NotEmpty(t, evs, "WorkerPool %s/%s has no SandboxConfigSwitched", p.ns, p.name)
		require.Equal(t, wantUses(gv, first), evs[0], "WorkerPool %s/%s", p.ns, p.name)
		at := first
		for _, e := range evs[1:] {
			m := switchedFrom.FindStringSubmatch(e)
			require.NotNil(t, m, "WorkerPool %s/%s: unexpected event %s", p.ns, p.name, e)
			require.Equal(t, at, m[1], "WorkerPool %s/%s: events %v", p.ns, p.name, evs)
			require.NotEqual(t, m[1], m[2], "WorkerPool %s/%s: events %v", p.ns, p.name, evs)
			at = m[2]
		}
		require.Equal(t, last, at, "WorkerPool %s/%s: events %v", p.ns, p.name, evs)
		require.LessOrEqual(t, len(evs), 3, "WorkerPool %s/%s: more moves than configs: %v", p.ns, p.name, evs)
	}
	for _, p := range moving {
		chain(p, cfg("d1"), cfg("d3"))
	}
	for _, p := range pinned {
		chain(p, cfg("pa"), cfg("pb"))
		require.Len(t, switchedEvents(t, p.ns, p.name), 2)
	}
	waitGone(t, gvisorConfig(cfg("d1"), false))

	// Who started the switches: both starters race for each (one start
	// wins, the other's is refused as already started or finds it done).
	// Every switch run a client started was started by one of the two
	// starters, and each started some: both act, unelected.
	by := startedBy(switchStarts(t, tq, ""), starters[0].Pid(), starters[1].Pid())
	t.Logf("switch runs by starter pid (0: another identity): %v", by)
	require.Zero(t, by[0], "switch runs started by neither starter: %v", by)
	for i, s := range starters {
		require.Positive(t, by[s.Pid()], "switch runs started by starter %d (pid %d): %v", i+1, s.Pid(), by)
	}
	for _, p := range append(workers[:], starters[:]...) {
		require.True(t, p.Running(), "%s keeps running", p.role)
	}
}
