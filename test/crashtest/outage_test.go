package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/testenv"
)

// product is the worker and the starter, each a real subprocess, on one
// task queue.
type product struct {
	worker, starter *process
	taskQueue       string
}

func startProduct(t *testing.T) *product {
	t.Helper()
	tq := testenv.TaskQueue(t)
	p := &product{worker: newProcess(t, "worker", tq, ""), starter: newProcess(t, "starter", tq, ""), taskQueue: tq}
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
		if p.Namespace == ns && len(p.Status.SandboxClasses) > 0 && refName(p.Status.SandboxClasses[0].ConfigRef) == config &&
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
// switches is in flight; the worker and the starter, left running, catch
// up, every switch finishes, and no invariant breaks.
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

	for i, how := range []string{"restart", "kill"} {
		next := start(i + 2)
		began := time.Now()
		switch how {
		case "restart":
			require.NoError(t, env.RestartTemporal(context.Background()))
		case "kill":
			require.NoError(t, env.KillTemporal())
			require.NoError(t, env.StartTemporal(context.Background()))
		}
		t.Logf("%s of the Temporal server with %d of %d pools not yet on %s took %s",
			how, pools-onConfig(t, ns, next), pools, next, time.Since(began).Round(time.Millisecond))
		settle(t, chk, scope)
		require.Equal(t, pools, onConfig(t, ns, next))
		require.False(t, p.worker.proc.Exited(), "the worker survives the Temporal server's restart")
		require.False(t, p.starter.proc.Exited(), "the starter survives the Temporal server's restart")
	}
	requireSound(t, chk, scope)
}

// TestAPIServerOutageMidSwitch: the kube-apiserver is killed while a wave
// of switches is in flight (etcd keeps the data) and an operator forces
// passes through Temporal; the worker's activities fail and retry with
// backoff; it stays down until they have retried several times; started
// again, everything converges and nothing has given up for good: every
// switch completed, a retried attempt is in the histories, and a change
// made after the outage is followed.
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
	settle(t, chk, scope)

	next := start(2)
	require.NoError(t, env.KillKubeAPIServer())
	down := time.Now()
	t.Cleanup(func() { _ = env.StartKubeAPIServer() }) // a no-op once it runs
	for i := range pools {
		require.NoError(t, wfapi.Reresolve(ctx, env.Temporal, wfapi.ScopeOf(testenv.Current().ClusterName, p.taskQueue), ns, fmt.Sprintf("p%d", i), nil))
	}
	// The outage lasts until an activity has failed five times in a row,
	// its retries backing off (0.2s, 0.4s, 0.8s, 1.6s between attempts).
	eventually(t, stepBound, "the worker to retry an activity against the stopped API server", func() (bool, string) {
		n, most := 0, 0
		for _, line := range strings.Split(p.worker.LogText(), "\n") {
			var l struct {
				Msg     string `json:"msg"`
				Attempt int    `json:"Attempt"`
				Error   string `json:"Error"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && (l.Msg == "Activity error." || l.Msg == "Local activity error.") && strings.Contains(l.Error, "connection refused") {
				n, most = n+1, max(most, l.Attempt)
			}
		}
		return most >= 5, fmt.Sprintf("%d failed attempts logged, the most retried at attempt %d", n, most)
	})
	require.NoError(t, env.StartKubeAPIServer())
	t.Logf("the API server was down for %s", time.Since(down).Round(time.Millisecond))

	settle(t, chk, scope)
	require.Equal(t, pools, onConfig(t, ns, next))
	// The steps that failed against the stopped server (the worker logged
	// them, above) have completed: every switch settled. The histories show
	// it only sometimes: a switch's steps are local, and a local step's
	// failed attempts leave no event; the marker of the attempt that
	// succeeded counts them, unless the task ran again from its start (a
	// reresolve refused its completion), which counts afresh.
	retried := retriedAttempts(t, p.taskQueue, "connection refused")
	t.Logf("activities that completed on a later attempt, by the histories: %v", retried)

	// The starter watches again: a change made now is followed.
	createAfterOthers(t, env.Kube, gvisorConfig(prefix+"-d3", true))
	settle(t, chk, scope)
	require.Equal(t, pools, onConfig(t, ns, prefix+"-d3"))
	for _, proc := range []*process{p.worker, p.starter} {
		require.False(t, proc.proc.Exited(), "the %s survives the API server's outage", proc.role)
	}
	requireSound(t, chk, scope)
}

// retriedAttempts lists the activities of the task queue's workflows that
// completed on a later attempt: a regular one after failing with an error
// containing cause, as "<activity> attempt <n>"; a local one as "<activity>
// attempt <n> (local)".
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
				out = append(out, fmt.Sprintf("%s attempt %d", types[a.GetScheduledEventId()], a.GetAttempt()))
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
					out = append(out, fmt.Sprintf("%s attempt %d (local)", data.ActivityType, data.Attempt))
				}
			}
		}
	}
	return out
}

// TestKillStarterInBurst: the starter (a real subprocess) is killed twice
// in a burst of changes to pools and configs, and started again each time
// while the burst goes on; its start-up resync catches up with what it
// missed and everything converges.
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
		{"start the starter", func() error { p.starter.Start(); return nil }},
		{"unpin ns1/b", func() error { return patchPool(ctx, kube, ns1, "b", pin("")) }},
		{"delete m1", func() error { return del(microvmConfig, cfg("m1")) }},
		{"create gvisor default g3", func() error { return kube.Create(ctx, gvisorConfig(cfg("g3"), true)) }},
		{"kill the starter", func() error { p.starter.Kill(); return nil }},
		{"pin ns2/c to m2", func() error { return patchPool(ctx, kube, ns2, "c", pin(cfg("m2"))) }},
		{"delete gpin", func() error { return del(gvisorConfig, cfg("gpin")) }},
		{"re-pin ns2/d to g3", func() error { return patchPool(ctx, kube, ns2, "d", pin(cfg("g3"))) }},
		{"scale ns1/c to 2", func() error { return patchPool(ctx, kube, ns1, "c", scale(2)) }},
		{"delete pool ns1/a", func() error { return kube.Delete(ctx, newPool(ns1, "a", gv, "")) }},
		{"start the starter", func() error { p.starter.Start(); return nil }},
	}
	for _, op := range burst {
		require.NoError(t, op.do(), op.what)
	}
	last := time.Now()
	requireSound(t, chk, scope)
	t.Logf("checked %s after the burst's last change", time.Since(last).Round(time.Millisecond))
	require.Equal(t, 3, p.starter.starts)
}
