package crashtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// killCase kills the worker right after one activity's side effect, before
// its completion reaches Temporal, in one scenario:
//   - switch: a pool pinned to a config in deletion is re-pinned to another
//     (Protect, Claim, Confirm, RecordEvent, WakeReleases);
//   - rollback: a pool is re-pinned to another config, which is deleted
//     between the switch's claim and its confirm: the worker is first
//     killed after Claim, the config deleted while it is down, and a worker
//     killed after the activity under test (RollBack, and RecordEvent of the
//     Warning) takes over;
//   - release: the config a pool left is deleted (ReadConfig, CachedUsers,
//     Unprotect);
//   - gone: as switch, killed after Confirm, and the pool is deleted while
//     the worker is down: the retried Confirm finds no pool, yet the move
//     happened, so its event is still recorded;
//   - gone-both: as gone, and the target is deleted (and released: no pool
//     names it any more) while the worker is down too: the re-run's Protect
//     is refused, and its roll back proves the confirm from the pool's last
//     states, so the event is still recorded;
//   - recreated: as release, killed after Unprotect, and the config is
//     created again, used by a pool and deleted while the worker is down
//     (runRecreatedCase).
type killCase struct {
	scenario, activity string
}

var killCases = []killCase{
	// The roll backs first: each waits out two start-to-close timeouts.
	{"rollback", "RollBack"},
	{"rollback", "RecordEvent"},
	{"switch", "Protect"},
	{"switch", "Claim"},
	{"switch", "Confirm"},
	{"switch", "RecordEvent"},
	{"switch", "WakeReleases"},
	{"release", "ReadConfig"},
	{"release", "CachedUsers"},
	{"release", "Unprotect"},
	{"gone", "Confirm"},
	{"gone-both", "Confirm"},
	{"recreated", "Unprotect"},
}

func TestKillWorkerAfterActivity(t *testing.T) {
	t.Parallel() // with the other tests that run no starter, after the rest
	chk := startChecker(t)
	for _, kc := range killCases {
		t.Run(kc.scenario+"/"+kc.activity, func(t *testing.T) {
			t.Parallel()
			runKillCase(t, chk, kc)
		})
	}
}

func runKillCase(t *testing.T, chk *Checker, kc killCase) {
	if kc.scenario == "recreated" {
		runRecreatedCase(t, chk)
		return
	}
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	ns := env.Namespace(t)
	tq := testenv.TaskQueue(t)
	starter := starterStandIn{taskQueue: tq}
	prefix := fmt.Sprintf("k%s-%s-%s", shortID(), kc.scenario, strings.ToLower(kc.activity))
	old, target := prefix+"-old", prefix+"-new"
	cleanScope(t, prefix, ns)
	const name = "pool"
	began := time.Now()
	since := func() time.Duration { return time.Since(began).Round(100 * time.Millisecond) }

	uses := fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig %q`, old)
	switched := fmt.Sprintf(`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig %q to %q`, old, target)
	deleting := fmt.Sprintf(`Warning SandboxConfigDeleting: SandboxConfig %q is being deleted; keeping %q`, old, old)

	// The worker kills itself after the first run of the activity whose
	// first argument names arg: the operation under test, not the set-up
	// (which uses other configs).
	arg := target
	switch {
	case kc.scenario == "release" || kc.activity == "WakeReleases":
		arg = old
	}
	w := newProcess(t, "worker", tq, "")
	// The activities the worker is killed in, each with the incarnation
	// killed: the histories must show each run again by another.
	type kill struct {
		activity string
		pid      int
	}
	var kills []kill
	switch {
	case kc.scenario == "rollback":
		w.StartCrashing("Claim", target)
		kills = append(kills, kill{"Claim", w.Pid()})
	default:
		w.StartCrashing(kc.activity, arg)
	}
	require.NoError(t, kube.Create(ctx, gvisorConfig(old, false)))
	require.NoError(t, kube.Create(ctx, gvisorConfig(target, false)))
	wp := newPool(ns, name, v1alpha1.SandboxClassGVisor, old)
	// The switch cases kill the worker with the pool's workers running: a
	// switch, crashes and all, must not restart or replace one.
	withPods := kc.scenario == "switch"
	if withPods {
		wp.Spec.Replicas = ptr(int32(2))
	}
	require.NoError(t, kube.Create(ctx, wp))
	starter.pool(t, ns, name)
	waitPool(t, ns, name, old, metav1.ConditionTrue)
	var podsBefore []string
	if withPods {
		podsBefore = waitReadyPods(t, ns, name, 2)
	}

	switch kc.scenario {
	case "switch":
		// The config switched away from is in deletion, held by the pool:
		// the switch ends by waking its release.
		require.NoError(t, kube.Delete(ctx, gvisorConfig(old, false)))
		starter.release(t, old)
		starter.pool(t, ns, name)
		waitRelease(t, old, wfapi.OutcomeWaiting)
		waitPool(t, ns, name, old, metav1.ConditionFalse)
	case "release":
		require.NoError(t, patchPool(ctx, kube, ns, name, pin(target)))
		starter.pool(t, ns, name)
		waitPool(t, ns, name, target, metav1.ConditionTrue)
	}
	t.Logf("%s: set up", since())

	switch kc.scenario {
	case "switch", "gone", "gone-both":
		require.NoError(t, patchPool(ctx, kube, ns, name, pin(target)))
		starter.pool(t, ns, name)
	case "rollback":
		require.NoError(t, patchPool(ctx, kube, ns, name, pin(target)))
		starter.pool(t, ns, name)
		w.WaitCrash("Claim", stepBound)
		t.Logf("%s: the worker crashed after Claim; deleting the claimed config", since())
		var wp v1alpha1.WorkerPool
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp))
		require.Equal(t, target, wp.Status.SandboxClasses[0].PendingConfigRef.NameOf(), "the claim is written")
		require.NoError(t, kube.Delete(ctx, gvisorConfig(target, false)))
		starter.release(t, target)
		starter.pool(t, ns, name)
		w.StartCrashing(kc.activity, arg)
	case "release":
		require.NoError(t, kube.Delete(ctx, gvisorConfig(old, false)))
		starter.release(t, old)
	}
	w.WaitCrash(kc.activity, stepBound)
	kills = append(kills, kill{kc.activity, w.Pid()})
	t.Logf("%s: the worker crashed after %s; restarting it without the crash hook", since(), kc.activity)
	if kc.scenario == "gone" || kc.scenario == "gone-both" {
		var wp v1alpha1.WorkerPool
		require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp))
		require.Equal(t, target, wp.Status.SandboxClasses[0].ConfigRef.NameOf(), "the confirm is written")
		require.NoError(t, kube.Delete(ctx, &wp))
		starter.pool(t, ns, name)
	}
	if kc.scenario == "gone-both" {
		// Deleted with the pool (kubectl delete -f of both): the re-run's
		// Protect finds the target in deletion, or gone once its release,
		// with no pool naming it, let it go.
		require.NoError(t, kube.Delete(ctx, gvisorConfig(target, false)))
		starter.release(t, target)
	}
	w.Start()

	var want []string
	switch kc.scenario {
	case "switch":
		waitPool(t, ns, name, target, metav1.ConditionTrue)
		waitReleased(t, old)
		waitGone(t, gvisorConfig(old, false))
		want = []string{uses, deleting, switched}
	case "rollback":
		got := waitPool(t, ns, name, old, metav1.ConditionFalse)
		require.Equal(t, v1alpha1.ReasonSandboxConfigDeleting, got.Status.SandboxClasses[0].Conditions[0].Reason)
		waitEvents(t, ns, name, []string{uses, fmt.Sprintf(
			`Warning SandboxConfigDeleting: SandboxConfig %q is being deleted; keeping %q`, target, old)})
		// The roll back dropped the claim that held the config: the
		// starter wakes its release, which lets it go; the pool, pinned to
		// a config now gone, says so.
		starter.release(t, target)
		waitReleased(t, target)
		waitGone(t, gvisorConfig(target, false))
		starter.pool(t, ns, name)
		want = []string{uses,
			fmt.Sprintf(`Warning SandboxConfigDeleting: SandboxConfig %q is being deleted; keeping %q`, target, old),
			fmt.Sprintf(`Warning SandboxConfigNotFound: SandboxConfig %q not found; keeping %q`, target, old)}
	case "release":
		waitReleased(t, old)
		waitGone(t, gvisorConfig(old, false))
		want = []string{uses, switched}
	case "gone", "gone-both":
		if kc.scenario == "gone-both" {
			waitReleased(t, target)
			waitGone(t, gvisorConfig(target, false))
		}
		waitQuery(t, fmt.Sprintf("WorkflowId = %q AND ExecutionStatus = 'Completed' AND Outcome = %q", testenv.Current().ClusterName.SwitchWorkflowID(ns, name), wfapi.OutcomePoolGone))
		want = []string{uses, switched}
	}
	waitEvents(t, ns, name, want)
	waitSwitchesDone(t, ns, name)
	if withPods {
		require.Equal(t, podsBefore, waitReadyPods(t, ns, name, 2), "the pool's pods (UIDs) across the switch and the crash")
	}
	t.Logf("%s: finished", since())
	// The histories show the killed work taken over by the next
	// incarnation: a regular activity run again once its start-to-close
	// timeout passed; a switch's local step's workflow task, started by the
	// first killed worker, timed out (the roll back's second kill, in the
	// retry of that task, shows only in its attempt) and completed by the
	// last incarnation.
	// Only the workflow the killed activity ran in counts: the killed
	// worker may also have started a task of another workflow just before
	// it died (the release a WakeReleases woke), which the next worker
	// then takes over too, or not, as the race goes.
	owner := env.ClusterName.SwitchWorkflowID(ns, name)
	if kc.scenario == "release" {
		owner = env.ClusterName.ReleaseWorkflowID(old)
	}
	var again, others []rerun
	for _, r := range rerunsAfterKill(t, tq, kills[0].activity, kills[0].pid) {
		if r.Workflow == owner {
			again = append(again, r)
		} else {
			others = append(others, r)
		}
	}
	t.Logf("killed in %+v; taken over in %s: %+v; elsewhere: %+v", kills, owner, again, others)
	require.Len(t, again, 1, "the histories show the work of %s, whose worker (pid %d) was killed, taken over once", kills[0].activity, kills[0].pid)
	require.True(t, strings.HasPrefix(again[0].Identity, identityOf(w.Pid())), "taken over by the last incarnation (pid %d): %+v", w.Pid(), again[0])
	if again[0].How == "local" {
		require.GreaterOrEqual(t, again[0].Attempt, int32(len(kills)+1), "the switch's workflow task completed after the %d killed attempts: %+v", len(kills), again[0])
	}
	requireSound(t, chk, Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{tq}})
	// Exactly these events, each once, also after the checker's wait.
	require.Equal(t, want, poolEvents(t, ns, name))
}
