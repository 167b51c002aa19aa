package crashtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
	"ate.dev/orchestrator/worker"
)

// The Lease timings of these tests (LEADER_ELECTION_*): a killed leader's
// Lease is free after 8 s instead of production's 15 s. The renew deadline
// leaves a busy machine room: a leader that cannot renew within it gives
// up leading and exits, which would fail the test.
const (
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = time.Second
)

// replica is a worker or a starter run as one of several replicas with
// --leader-elect, its metrics served so that the test can ask it whether it
// leads.
type replica struct {
	*process
	metricsAddr string
}

// newReplica prepares a leader-elected worker or starter whose Lease is in
// leaseNamespace.
func newReplica(t *testing.T, role, taskQueue, leaseNamespace string) *replica {
	t.Helper()
	r := &replica{process: newProcess(t, role, taskQueue, ""), metricsAddr: testenv.FreeAddr(t)}
	// Later entries win over newProcess's METRICS_BIND_ADDRESS=0.
	r.env = append(r.env,
		"METRICS_BIND_ADDRESS="+r.metricsAddr,
		"METRICS_SECURE=false", // plain HTTP on loopback
		"LEADER_ELECT=true",
		"LEADER_ELECTION_NAMESPACE="+leaseNamespace,
		"LEADER_ELECTION_LEASE_DURATION="+leaseDuration.String(),
		"LEADER_ELECTION_RENEW_DEADLINE="+renewDeadline.String(),
		"LEADER_ELECTION_RETRY_PERIOD="+retryPeriod.String(),
	)
	return r
}

// leads asks the replica's /metrics whether it holds the Lease: client-go's
// leader elector sets leader_election_master_status{name="<lease>"} to 1
// while it leads (the Lease's holderIdentity, host name and a random UUID,
// does not say which of two processes on one host it is). It returns what
// it saw, for the failure message.
func (r *replica) leads(lease string) (bool, string) {
	if !r.Running() {
		return false, "not running"
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + r.metricsAddr + "/metrics")
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err.Error()
	}
	// Whatever other labels the series carries (the cluster's name, on
	// every series of the process).
	series := regexp.MustCompile(fmt.Sprintf(`(?m)^leader_election_master_status\{[^}]*name=%q[^}]*\} (\S+)$`, lease))
	if m := series.FindStringSubmatch(string(b)); m != nil {
		return m[1] == "1", m[0]
	}
	return false, "no leader_election_master_status for " + lease
}

// waitLeader polls until exactly one of rs leads the Lease, and returns it.
func waitLeader(t *testing.T, lease string, rs ...*replica) *replica {
	t.Helper()
	var leader *replica
	eventually(t, 3*leaseDuration+10*time.Second, "one leader of Lease "+lease, func() (bool, string) {
		leader = nil
		var seen []string
		n := 0
		for i, r := range rs {
			ok, why := r.leads(lease)
			seen = append(seen, fmt.Sprintf("%s %d (pid %d): %s", r.role, i+1, r.Pid(), why))
			if ok {
				leader = r
				n++
			}
		}
		return n == 1, strings.Join(seen, "; ")
	})
	return leader
}

// readLease reads a leader election Lease.
func readLease(t *testing.T, ns, name string) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	require.NoError(t, testenv.Current().Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &l), "Lease %s/%s", ns, name)
	return &l
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func transitions(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// replicas is two workers and two starters on one task queue, each
// leader-elected, as the product's Deployments run them.
type replicas struct {
	workers, starters [2]*replica
	taskQueue, leases string
}

func newReplicas(t *testing.T, leaseNamespace string) *replicas {
	t.Helper()
	tq := testenv.TaskQueue(t)
	rs := &replicas{taskQueue: tq, leases: leaseNamespace}
	for i := range 2 {
		rs.workers[i] = newReplica(t, "worker", tq, leaseNamespace)
		rs.starters[i] = newReplica(t, "starter", tq, leaseNamespace)
	}
	return rs
}

// switchedEvents are a pool's SandboxConfigSwitched events, oldest first.
func switchedEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	var out []string
	for _, e := range poolEvents(t, ns, name) {
		if strings.Contains(e, " "+v1alpha1.EventReasonSandboxConfigSwitched+": ") {
			out = append(out, e)
		}
	}
	return out
}

func wantUses(class v1alpha1.SandboxClass, config string) string {
	return fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class %q uses SandboxConfig %q`, class, config)
}

func wantSwitched(class v1alpha1.SandboxClass, from, to string) string {
	return fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class %q switched from SandboxConfig %q to %q`, class, from, to)
}

// TestTwoStartersLeaderKilledInBurst: two workers and two starters, all
// leader-elected. The leading starter (found through its metrics) is
// killed in the wave of a new class default that moves twelve pools, once
// the first switch has claimed; while no starter leads, configs are deleted (one held by pools still moving,
// one a pool is pinned to), that pool is re-pinned, and a new microvm
// default moves two more. The other starter takes the Lease once it
// expires and its initial list starts every switch and release the first
// missed; everything converges with each move's event once.
func TestTwoStartersLeaderKilledInBurst(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns1, ns2, leases := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	prefix := "ls" + shortID()
	cfg := func(s string) string { return prefix + "-" + s }
	rs := newReplicas(t, leases)
	scope := Scope{Namespaces: []string{ns1, ns2}, Configs: prefixed(prefix), TaskQueues: []string{rs.taskQueue}}
	for _, r := range append(rs.workers[:], rs.starters[:]...) {
		r.Start()
	}
	leader := waitLeader(t, starter.LeaseName, rs.starters[:]...)
	survivor := rs.starters[0]
	if leader == survivor {
		survivor = rs.starters[1]
	}
	before := readLease(t, leases, starter.LeaseName)
	require.NotEmpty(t, holder(before), "the starters' Lease has a holder")
	waitLeader(t, worker.LeaseName, rs.workers[:]...)
	t.Logf("starter pid %d leads (Lease holder %s); pid %d waits", leader.Pid(), holder(before), survivor.Pid())

	gv, mv := v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("g1"), true)))
	require.NoError(t, kube.Create(ctx, microvmConfig(cfg("m1"), true)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("gpin"), false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(cfg("gold"), false)))
	type poolRef struct{ ns, name string }
	var moving []poolRef // unpinned gvisor pools: g1, then g2
	for i := range 12 {
		p := poolRef{[]string{ns1, ns2}[i%2], fmt.Sprintf("g%d", i)}
		moving = append(moving, p)
		require.NoError(t, kube.Create(ctx, newPool(p.ns, p.name, gv, "")))
	}
	for _, ns := range []string{ns1, ns2} {
		require.NoError(t, kube.Create(ctx, newPool(ns, "vm", mv, "")))
	}
	require.NoError(t, kube.Create(ctx, newPool(ns1, "pinned", gv, cfg("gold"))))
	settle(t, chk, scope)

	// The burst. The leader is killed once the new default's first switch
	// has claimed its target: it has started part of the wave, at least.
	mark := chk.Mark()
	createAfterOthers(t, kube, gvisorConfig(cfg("g2"), true))
	awaitCtx, cancel := context.WithTimeout(ctx, stepBound)
	defer cancel()
	_, err := chk.Await(awaitCtx, mark, func(r *Record) bool { return pendingClaim(ns1)(r) || pendingClaim(ns2)(r) })
	require.NoError(t, err, "no switch claimed %s", cfg("g2"))
	leader.Kill()
	killed := time.Now()
	<-leader.proc.Done()
	// Nobody leads until the Lease expires: the starter that waits cannot
	// take it sooner, so whatever these changes call for is started by it.
	require.NoError(t, kube.Delete(ctx, gvisorConfig(cfg("g1"), false)))
	require.NoError(t, kube.Delete(ctx, gvisorConfig(cfg("gold"), false)))
	require.NoError(t, patchPool(ctx, kube, ns1, "pinned", pin(cfg("gpin"))))
	createAfterOthers(t, kube, microvmConfig(cfg("m2"), true))
	require.NoError(t, kube.Delete(ctx, microvmConfig(cfg("m1"), false)))
	leads, why := survivor.leads(starter.LeaseName)
	require.False(t, leads, "the waiting starter leads %s after the kill, before the Lease could expire: %s",
		time.Since(killed).Round(time.Millisecond), why)
	gap := time.Since(killed)

	require.Same(t, survivor, waitLeader(t, starter.LeaseName, rs.starters[:]...))
	after := readLease(t, leases, starter.LeaseName)
	tookOver := after.Spec.AcquireTime.Time
	require.NotEqual(t, holder(before), holder(after), "a new holder of the starters' Lease")
	require.Equal(t, transitions(before)+1, transitions(after), "one transition of the starters' Lease")
	t.Logf("the changes in the gap took %s; the waiting starter took the Lease %s after the kill (holder %s)",
		gap.Round(time.Millisecond), tookOver.Sub(killed).Round(time.Millisecond), holder(after))
	// A change after the takeover: the new leader follows its watches too.
	require.NoError(t, kube.Create(ctx, newPool(ns2, "late", gv, "")))

	rep := requireSound(t, chk, scope)
	require.True(t, rep.Converged)
	for _, p := range moving {
		require.Equal(t, []string{wantUses(gv, cfg("g1")), wantSwitched(gv, cfg("g1"), cfg("g2"))}, switchedEvents(t, p.ns, p.name), "WorkerPool %s/%s", p.ns, p.name)
	}
	for _, ns := range []string{ns1, ns2} {
		require.Equal(t, []string{wantUses(mv, cfg("m1")), wantSwitched(mv, cfg("m1"), cfg("m2"))}, switchedEvents(t, ns, "vm"), "WorkerPool %s/vm", ns)
	}
	require.Equal(t, []string{wantUses(gv, cfg("gold")), wantSwitched(gv, cfg("gold"), cfg("gpin"))}, switchedEvents(t, ns1, "pinned"))
	require.Equal(t, []string{wantUses(gv, cfg("g2"))}, switchedEvents(t, ns2, "late"))

	// Who started what: the gap's moves (two microvm pools, the re-pinned
	// pool) and the late pool's can only have been started by the new
	// leader, and nothing started a switch while no starter led. (Releases
	// are also woken by the switches' WakeReleases, from the workers.)
	execs, err := Executions(ctx, env.Temporal, fmt.Sprintf("TaskQueue = %q", rs.taskQueue))
	require.NoError(t, err)
	var byOld, byNew int
	for _, e := range execs {
		if e.Type.GetName() != wfapi.SwitchWorkflow {
			continue
		}
		started := e.StartTime.AsTime()
		switch {
		case started.Before(tookOver) && started.After(killed.Add(time.Second)):
			// Only a leading starter starts switches (no operator
			// re-resolves here); one of the killed leader's requests could
			// at most be stamped a moment after its death.
			t.Errorf("switch %s started %s, after the kill and before the takeover", e.Execution.WorkflowId, started.Format(time.RFC3339Nano))
		case started.Before(tookOver):
			byOld++
		default:
			byNew++
		}
	}
	const setUp = 15 // twelve gvisor pools, two microvm pools, the pinned pool
	t.Logf("switches started by the first leader: %d (%d of the set-up, %d of the g2 wave); by the second: %d", byOld, setUp, byOld-setUp, byNew)
	require.Greater(t, byOld, setUp, "the first leader started part of the g2 wave")
	require.GreaterOrEqual(t, byNew, 4, "the new leader started the gap's moves")
	require.True(t, survivor.Running(), "the new leader keeps running")
	for _, w := range rs.workers {
		require.True(t, w.Running(), "the workers keep running")
	}
}

// TestTwoWorkersOneKilledMidWave: two workers and two starters, all
// leader-elected. The worker that leads (and so runs the pool reconciler)
// is killed by the crash hook (SIGKILL) right after it confirmed one
// pool's move in a wave of sixteen, the switch's completion lost; the other
// worker takes over that switch once its workflow task times out, runs
// its own share of the wave, and takes the worker Lease, so a pool scaled
// after the kill gets its Deployment. Every switch completes, each move's
// event once.
func TestTwoWorkersOneKilledMidWave(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns, leases := env.Namespace(t), env.Namespace(t)
	prefix := "lw" + shortID()
	rs := newReplicas(t, leases)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{rs.taskQueue}}
	victim, survivor := rs.workers[0], rs.workers[1]
	next := prefix + "-d2"
	// The victim starts alone, so it is the worker that leads; the test
	// checks that rather than assuming it.
	victim.StartCrashing("Confirm", next)
	require.Same(t, victim, waitLeader(t, worker.LeaseName, victim))
	survivor.Start()
	for _, s := range rs.starters {
		s.Start()
	}
	waitLeader(t, starter.LeaseName, rs.starters[:]...)
	require.Same(t, victim, waitLeader(t, worker.LeaseName, rs.workers[:]...))
	t.Logf("worker pid %d leads and will crash; pid %d survives", victim.Pid(), survivor.Pid())

	const pools = 16
	start := wave(t, chk, ns, prefix, pools)
	settle(t, chk, scope)
	require.Equal(t, pools, onConfig(t, ns, prefix+"-d1"))

	require.Equal(t, next, start(2))
	victim.WaitCrash("Confirm", stepBound)
	crashed, killedPid := time.Now(), victim.Pid()
	t.Logf("the leading worker crashed after a Confirm to %s; %d of %d pools were on it", next, onConfig(t, ns, next), pools)
	require.NoError(t, patchPool(ctx, kube, ns, "p0", scale(2)))
	require.Same(t, survivor, waitLeader(t, worker.LeaseName, rs.workers[:]...))
	t.Logf("the surviving worker took the worker Lease %s after the crash", time.Since(crashed).Round(time.Millisecond))

	rep := requireSound(t, chk, scope)
	require.True(t, rep.Converged)
	require.Equal(t, pools, onConfig(t, ns, next))
	for i := range pools {
		name := fmt.Sprintf("p%d", i)
		require.Equal(t, []string{wantUses(v1alpha1.SandboxClassGVisor, prefix+"-d1"),
			wantSwitched(v1alpha1.SandboxClassGVisor, prefix+"-d1", next)}, switchedEvents(t, ns, name), "WorkerPool %s/%s", ns, name)
	}
	handed := handedOver(t, rs.taskQueue, killedPid, survivor.Pid())
	t.Logf("switches the surviving worker finished after the crashed one's workflow task timed out: %v", handed)
	require.NotEmpty(t, handed, "a switch whose workflow task the crashed worker held was finished by the other")
	// The Confirm the crash hook killed the victim in: its switch's task
	// timed out, and the survivor ran the step again and recorded it.
	confirms := rerunsAfterKill(t, rs.taskQueue, "Confirm", killedPid)
	t.Logf("Confirm, killed in worker pid %d, ran again: %+v", killedPid, confirms)
	require.NotEmpty(t, confirms, "the killed Confirm's switch finished by another worker")
	for _, r := range confirms {
		require.True(t, strings.HasPrefix(r.Identity, identityOf(survivor.Pid())), "the killed Confirm of %s ran again on the surviving worker (pid %d), not %s", r.Workflow, survivor.Pid(), r.Identity)
	}
	require.True(t, survivor.Running(), "the surviving worker keeps running")
}

// handedOver returns the switch runs of the task queue in which a workflow
// task that the worker of pid from had started timed out, and the worker
// of pid to completed a later one. A worker identity is "<pid>@<host>@..."
// (the Temporal SDK's default).
func handedOver(t *testing.T, taskQueue string, from, to int) []string {
	t.Helper()
	env := testenv.Current()
	ctx := context.Background()
	execs, err := Executions(ctx, env.Temporal, fmt.Sprintf("TaskQueue = %q AND WorkflowType = %q", taskQueue, wfapi.SwitchWorkflow))
	require.NoError(t, err)
	fromID, toID := fmt.Sprintf("%d@", from), fmt.Sprintf("%d@", to)
	var out []string
	for _, e := range execs {
		it := env.Temporal.GetWorkflowHistory(ctx, e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		startedBy, lost := "", false
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err, "reading the history of %s", e.Execution.WorkflowId)
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				startedBy = ev.GetWorkflowTaskStartedEventAttributes().GetIdentity()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				lost = lost || strings.HasPrefix(startedBy, fromID)
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if lost && strings.HasPrefix(ev.GetWorkflowTaskCompletedEventAttributes().GetIdentity(), toID) {
					out = append(out, e.Execution.WorkflowId)
					lost = false
				}
				startedBy = ""
			}
		}
	}
	return out
}
