package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// product is the worker and the starter, each a real subprocess, on one
// task queue.
type product struct {
	worker, starter *process
	taskQueue       string
}

// startProduct runs a worker (with workerEnv added to its environment) and
// a starter on a task queue of the test's.
func startProduct(t *testing.T, workerEnv ...string) *product {
	t.Helper()
	tq := testenv.TaskQueue(t)
	p := &product{worker: newProcess(t, "worker", tq, "", workerEnv...), starter: newProcess(t, "starter", tq, ""), taskQueue: tq}
	p.worker.Start()
	p.starter.Start()
	return p
}

func settle(t *testing.T, chk *Checker, scope Scope) {
	t.Helper()
	require.NoError(t, chk.Settle(context.Background(), scope, settleBound))
}

// pendingClaim matches a pool state of ns with a switch between its claim
// and its confirm or roll back.
func pendingClaim(ns string) func(*Record) bool {
	return func(r *Record) bool {
		if r.Pool == nil || r.Pool.Namespace != ns || r.Deleted {
			return false
		}
		for _, c := range r.Pool.Status.SandboxClasses {
			if c.PendingConfigRef != nil {
				return true
			}
		}
		return false
	}
}

// onConfig counts the pools of ns whose status names config.
func onConfig(t *testing.T, ns, config string) int {
	t.Helper()
	var pools v1alpha1.WorkerPoolList
	if err := testenv.Current().Kube.List(context.Background(), &pools); err != nil {
		return -1
	}
	n := 0
	for _, p := range pools.Items {
		if p.Namespace == ns && len(p.Status.SandboxClasses) > 0 && p.Status.SandboxClasses[0].ConfigRef.NameOf() == config &&
			p.Status.SandboxClasses[0].PendingConfigRef == nil {
			n++
		}
	}
	return n
}

// wave sets up n unpinned gvisor pools on a class default and returns a
// function that starts a wave of n switches (a newer class default) and
// returns once one of them has claimed its target and not yet confirmed.
func wave(t *testing.T, chk *Checker, ns, prefix string, n int) func(i int) string {
	t.Helper()
	kube := testenv.Current().Kube
	require.NoError(t, kube.Create(context.Background(), gvisorConfig(prefix+"-d1", true)))
	for i := range n {
		require.NoError(t, kube.Create(context.Background(), newPool(ns, fmt.Sprintf("p%d", i), v1alpha1.SandboxClassGVisor, "")))
	}
	return func(i int) string {
		mark := chk.Mark()
		next := fmt.Sprintf("%s-d%d", prefix, i)
		createAfterOthers(t, kube, gvisorConfig(next, true))
		ctx, cancel := context.WithTimeout(context.Background(), stepBound)
		defer cancel()
		_, err := chk.Await(ctx, mark, pendingClaim(ns))
		require.NoError(t, err, "no switch claimed %s", next)
		return next
	}
}

// TestTemporalRestartMidSwitch: the Temporal server (file-backed) is
// restarted, then killed and started again, each time while a wave of
// switches is in flight (checked: a switch of it was open across each
// outage); the worker and the starter, left running, catch up, every
// switch finishes, and no invariant breaks.
func TestTemporalRestartMidSwitch(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "tr" + shortID()
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}
	const pools = 10
	start := wave(t, chk, ns, prefix, pools)
	settle(t, chk, scope)

	// A wave of ten one-task switches can finish between the claim the test
	// waits for and the outage landing (seen once on PostgreSQL): such an
	// outage fell between switches and proves nothing, so it is tried again
	// on a new default, a bounded number of times.
	const tries = 3
	wavesStarted := 1
	for _, how := range []string{"restart", "kill"} {
		var across []string
		for try := 1; len(across) == 0 && try <= tries; try++ {
			wavesStarted++
			next := start(wavesStarted)
			began := time.Now()
			switch how {
			case "restart":
				require.NoError(t, env.RestartTemporal(context.Background()))
			case "kill":
				require.NoError(t, env.KillTemporal())
				require.NoError(t, env.StartTemporal(context.Background()))
			}
			back := time.Now()
			t.Logf("%s %d of the Temporal server with %d of %d pools not yet on %s took %s",
				how, try, pools-onConfig(t, ns, next), pools, next, back.Sub(began).Round(time.Millisecond))
			settle(t, chk, scope)
			// Mid-switch: some switch of the wave was open across the whole
			// outage, started before the server went and closed after it was
			// back (the server's clock is this host's).
			execs, err := Executions(context.Background(), env.Temporal, fmt.Sprintf("TaskQueue = %q AND WorkflowType = %q", p.taskQueue, wfapi.SwitchWorkflow))
			require.NoError(t, err)
			for _, e := range execs {
				if e.StartTime.AsTime().Before(began) && e.CloseTime != nil && e.CloseTime.AsTime().After(back) {
					across = append(across, e.Execution.WorkflowId)
				}
			}
			t.Logf("switches open across %s %d: %v", how, try, across)
			require.Equal(t, pools, onConfig(t, ns, next))
			require.False(t, p.worker.proc.Exited(), "the worker survives the Temporal server's %s", how)
			require.False(t, p.starter.proc.Exited(), "the starter survives the Temporal server's %s", how)
		}
		require.NotEmpty(t, across, "a switch open across the %s of the Temporal server in %d tries", how, tries)
	}
	requireSound(t, chk, scope)
}

// TestAPIServerOutageMidSwitch: the kube-apiserver is killed while a wave
// of switches is in flight (etcd keeps the data) and an operator forces
// passes through Temporal; the worker's activities fail and retry with
// backoff (its log shows them refused); it stays down until they have
// retried several times; started again, everything converges and nothing
// has given up for good: every switch completed, the re-resolution of a
// pool the wave does not move shows in its history an Observe completed
// on a later attempt, and a change made after the outage is followed.
func TestAPIServerOutageMidSwitch(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "ao" + shortID()
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}
	const pools = 10
	start := wave(t, chk, ns, prefix, pools)
	// A pool the wave does not move (pinned): no switch of its runs when
	// the outage begins, so its re-resolution starts a run whose first
	// step, Observe, is a regular activity, whose failed attempts the
	// history keeps.
	require.NoError(t, env.Kube.Create(ctx, newPool(ns, "pinned", v1alpha1.SandboxClassGVisor, prefix+"-d1")))
	settle(t, chk, scope)

	next := start(2)
	require.NoError(t, env.KillKubeAPIServer())
	down := time.Now()
	t.Cleanup(func() { _ = env.StartKubeAPIServer() }) // a no-op once it runs
	for _, name := range append(poolNames(pools), "pinned") {
		require.NoError(t, wfapi.Reresolve(ctx, env.Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, p.taskQueue), ns, name, nil))
	}
	// The outage lasts until an activity has failed five times in a row,
	// its retries backing off (0.2s, 0.4s, 0.8s, 1.6s between attempts).
	pinnedID := env.ClusterName.SwitchWorkflowID(ns, "pinned")
	var pinnedRefused int // the pinned pool's Observe attempts refused by the stopped server
	eventually(t, stepBound, "the worker to retry an activity against the stopped API server", func() (bool, string) {
		n, most := 0, 0
		pinnedRefused = 0
		for _, l := range refusedAttempts(p.worker.LogText()) {
			n, most = n+1, max(most, l.Attempt)
			if l.WorkflowID == pinnedID && l.ActivityType == "Observe" {
				pinnedRefused++
			}
		}
		return most >= 5 && pinnedRefused > 0, fmt.Sprintf("%d failed attempts logged, the most retried at attempt %d; %d of the pinned pool's Observe", n, most, pinnedRefused)
	})
	require.NoError(t, env.StartKubeAPIServer())
	t.Logf("the API server was down for %s", time.Since(down).Round(time.Millisecond))

	settle(t, chk, scope)
	require.Equal(t, pools, onConfig(t, ns, next))
	// The steps that failed against the stopped server (the worker logged
	// them, above) have completed: every switch settled. The pinned pool's
	// Observe, a regular activity started during the outage and refused by
	// the stopped server (the log, above), completed on a later attempt:
	// its history says so. (Its last failure before that may be its
	// start-to-close timeout rather than the refusal: an attempt made as
	// the API server comes back can hang until then. A switch's other steps
	// are local: a local step's failed attempts leave no event; the marker
	// of the attempt that succeeded counts them, unless the task ran again
	// from its start, which counts afresh, so the wave's switches show them
	// only sometimes.)
	retried := retriedAttempts(t, p.taskQueue, "")
	t.Logf("activities that completed on a later attempt, by the histories: %v; the pinned pool's Observe was refused %d times by the log", retried, pinnedRefused)
	require.True(t, slices.ContainsFunc(retried, func(r string) bool { return strings.HasPrefix(r, pinnedID+": Observe attempt ") }),
		"the histories show the pinned pool's Observe completed on a later attempt: %v", retried)

	// The starter watches again: a change made now is followed.
	createAfterOthers(t, env.Kube, gvisorConfig(prefix+"-d3", true))
	settle(t, chk, scope)
	require.Equal(t, pools, onConfig(t, ns, prefix+"-d3"))
	for _, proc := range []*process{p.worker, p.starter} {
		require.False(t, proc.proc.Exited(), "the %s survives the API server's outage", proc.role)
	}
	requireSound(t, chk, scope)
}

// refusedAttempt is a failed activity attempt the worker logged.
type refusedAttempt struct {
	Msg          string `json:"msg"`
	WorkflowID   string `json:"WorkflowID"`
	ActivityType string `json:"ActivityType"`
	Attempt      int    `json:"Attempt"`
	Error        string `json:"Error"`
}

// refusedAttempts are the attempts of a worker's log, regular ("Activity
// error.", the SDK's) and local ("Local activity error.", the product's),
// that failed because the API server refused the connection.
func refusedAttempts(log string) []refusedAttempt {
	var out []refusedAttempt
	for _, line := range strings.Split(log, "\n") {
		var l refusedAttempt
		if json.Unmarshal([]byte(line), &l) == nil && (l.Msg == "Activity error." || l.Msg == "Local activity error.") && strings.Contains(l.Error, "connection refused") {
			out = append(out, l)
		}
	}
	return out
}

// retriedAttempts lists the activities of the task queue's workflows that
// completed on a later attempt: a regular one after failing with an error
// containing cause ("" for any), as "<workflow ID>: <activity> attempt <n>"; a local one
// as "<workflow ID>: <activity> attempt <n> (local)".
func retriedAttempts(t *testing.T, taskQueue, cause string) []string {
	t.Helper()
	tc := testenv.Current().Temporal
	execs, err := Executions(context.Background(), tc, fmt.Sprintf("TaskQueue = %q", taskQueue))
	require.NoError(t, err)
	var out []string
	for _, e := range execs {
		it := tc.GetWorkflowHistory(context.Background(), e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		types := map[int64]string{}
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
				types[ev.GetEventId()] = a.GetActivityType().GetName()
			}
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 &&
				strings.Contains(a.GetLastFailure().GetMessage(), cause) {
				out = append(out, fmt.Sprintf("%s: %s attempt %d", e.Execution.WorkflowId, types[a.GetScheduledEventId()], a.GetAttempt()))
			}
			// A switch's steps are local: the marker of the attempt that
			// succeeded records its attempt number, not the failures before
			// it (the worker's log has those: the caller checks them).
			if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
				var data struct {
					ActivityType string
					Attempt      int32
				}
				if p := m.GetDetails()["data"].GetPayloads(); len(p) > 0 && json.Unmarshal(p[0].GetData(), &data) == nil && data.Attempt > 1 {
					out = append(out, fmt.Sprintf("%s: %s attempt %d (local)", e.Execution.WorkflowId, data.ActivityType, data.Attempt))
				}
			}
		}
	}
	return out
}

// TestKillStarterInBurst: the starter (a real subprocess) is killed twice
// in a burst of changes to pools and configs, and started again each time
// while the burst goes on; its start-up resync catches up with what it
// missed (the histories show the moves of pools re-pinned while it was
// down started by a later incarnation) and everything converges.
func TestKillStarterInBurst(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	prefix := "sk" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	p := startProduct(t)
	scope := Scope{Namespaces: []string{ns1, ns2}, Configs: prefixed(prefix), TaskQueues: []string{p.taskQueue}}
	pids := []int{p.starter.Pid()} // each incarnation's

	gv, mv := v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("g1"), true)))
	require.NoError(t, kube.Create(ctx, microvmConfig(cfg("m1"), true)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("gpin"), false)))
	for _, wp := range []*v1alpha1.WorkerPool{
		newPool(ns1, "a", gv, ""), newPool(ns1, "b", gv, ""), newPool(ns1, "c", gv, ""),
		newPool(ns1, "d", mv, ""), newPool(ns1, "e", gv, cfg("gpin")),
		newPool(ns2, "a", gv, ""), newPool(ns2, "b", gv, ""), newPool(ns2, "c", mv, ""),
		newPool(ns2, "d", gv, cfg("gpin")), newPool(ns2, "e", gv, cfg("g1")),
	} {
		require.NoError(t, kube.Create(ctx, wp))
	}
	settle(t, chk, scope)

	del := func(c func(string, bool) *v1alpha1.SandboxConfig, name string) error {
		return kube.Delete(ctx, c(name, false))
	}
	burst := []struct {
		what string
		do   func() error
	}{
		{"create gvisor default g2", func() error { return kube.Create(ctx, gvisorConfig(cfg("g2"), true)) }},
		{"scale ns1/a to 3", func() error { return patchPool(ctx, kube, ns1, "a", scale(3)) }},
		{"pin ns1/b to g1", func() error { return patchPool(ctx, kube, ns1, "b", pin(cfg("g1"))) }},
		{"create microvm default m2", func() error { return kube.Create(ctx, microvmConfig(cfg("m2"), true)) }},
		{"un-annotate g1", func() error { return patchDefault(ctx, kube, cfg("g1"), false) }},
		{"kill the starter", func() error { p.starter.Kill(); return nil }},
		{"delete g2", func() error { return del(gvisorConfig, cfg("g2")) }},
		{"re-pin ns1/e to g1", func() error { return patchPool(ctx, kube, ns1, "e", pin(cfg("g1"))) }},
		{"delete pool ns2/b", func() error { return kube.Delete(ctx, newPool(ns2, "b", gv, "")) }},
		{"create pool ns2/f", func() error { return kube.Create(ctx, newPool(ns2, "f", gv, "")) }},
		{"annotate gpin", func() error { return patchDefault(ctx, kube, cfg("gpin"), true) }},
		{"scale ns2/a to 1", func() error { return patchPool(ctx, kube, ns2, "a", scale(1)) }},
		{"start the starter", func() error { p.starter.Start(); pids = append(pids, p.starter.Pid()); return nil }},
		{"unpin ns1/b", func() error { return patchPool(ctx, kube, ns1, "b", pin("")) }},
		{"delete m1", func() error { return del(microvmConfig, cfg("m1")) }},
		{"create gvisor default g3", func() error { return kube.Create(ctx, gvisorConfig(cfg("g3"), true)) }},
		{"kill the starter", func() error { p.starter.Kill(); return nil }},
		{"pin ns2/c to m2", func() error { return patchPool(ctx, kube, ns2, "c", pin(cfg("m2"))) }},
		{"delete gpin", func() error { return del(gvisorConfig, cfg("gpin")) }},
		{"re-pin ns2/d to g3", func() error { return patchPool(ctx, kube, ns2, "d", pin(cfg("g3"))) }},
		{"scale ns1/c to 2", func() error { return patchPool(ctx, kube, ns1, "c", scale(2)) }},
		{"delete pool ns1/a", func() error { return kube.Delete(ctx, newPool(ns1, "a", gv, "")) }},
		{"start the starter", func() error { p.starter.Start(); pids = append(pids, p.starter.Pid()); return nil }},
	}
	for _, op := range burst {
		require.NoError(t, op.do(), op.what)
	}
	last := time.Now()
	requireSound(t, chk, scope)
	t.Logf("checked %s after the burst's last change", time.Since(last).Round(time.Millisecond))

	// Each restarted starter caught up with what happened while none ran:
	// ns1/e was re-pinned to g1 while the first incarnation was dead, ns2/d
	// to g3 while the second was (its config deleted meanwhile); only a
	// later incarnation's start-up resync can have started those moves.
	require.Len(t, pids, 3, "three incarnations of the starter")
	for _, c := range []struct {
		ns, pool, to string
		by           []int // the incarnations that may have started the move
	}{{ns1, "e", cfg("g1"), pids[1:]}, {ns2, "d", cfg("g3"), pids[2:]}} {
		var moves []switchStart
		for _, s := range switchStarts(t, p.taskQueue, fmt.Sprintf("WorkflowId = %q", env.ClusterName.SwitchWorkflowID(c.ns, c.pool))) {
			if s.To == c.to {
				moves = append(moves, s)
			}
		}
		by := startedBy(moves, pids...)
		t.Logf("switch runs moving WorkerPool %s/%s to %s, by starter pid (0: another identity): %v; incarnations %v", c.ns, c.pool, c.to, by, pids)
		require.NotEmpty(t, moves, "a switch run moving WorkerPool %s/%s to %s", c.ns, c.pool, c.to)
		for _, s := range moves {
			require.True(t, slices.ContainsFunc(c.by, func(pid int) bool { return strings.HasPrefix(s.Identity, identityOf(pid)) }),
				"WorkerPool %s/%s's move to %s started by %s, not by an incarnation started after its re-pin (pids %v)", c.ns, c.pool, c.to, s.Identity, c.by)
		}
	}
	require.True(t, p.starter.Running(), "the last incarnation keeps running")
}

func poolNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("p%d", i))
	}
	return out
}
