//go:build record

package replay

// The recorder. It runs only with the build tag `record`, which starts real
// servers; `make record-histories` runs it:
//
//	KUBEBUILDER_ASSETS=$PWD/bin ATE_TEMPORAL_CLI=$PWD/bin/temporal \
//		go test -tags record ./replay -run 'TestRecord/' -count=1 -v
//
// Each scenario drives the product (worker and starter in this process, on
// a fresh task queue) through the Kubernetes API, as a user (or an
// operator) does, exports the histories it names with GetWorkflowHistory,
// checks them with the ordering tests' checks, and, once the scenario ran to
// its end, writes them with the execution each was recorded from
// (WriteFixture, which never overwrites) and replays the written file. A
// scenario whose fixtures of the current Version all exist is skipped.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
)

func TestMain(m *testing.M) {
	if missing := missingFixtures(); len(missing) == 0 {
		// Do not start servers to find that out.
		fmt.Fprintf(os.Stderr, "nothing to record: every %s fixture exists, and fixtures are never re-recorded. "+
			"After changing a workflow, bump replay.Version and record again.\n", Version)
		os.Exit(1)
	}
	// A Prometheus for the rollout's analysis (rollout-rolled-back).
	os.Exit(testenv.Main(m, testenv.Options{Prometheus: true}))
}

// missingFixtures lists the fixtures of the current Version no file holds.
func missingFixtures() []string {
	var missing []string
	for _, sc := range scenarios {
		for _, out := range sc.outputs {
			kind, scenario, _ := cut(out)
			if !recordsKind(kind) {
				continue // its shape's fixtures are of an older version (shapeVersions)
			}
			if _, err := os.Stat(FixturePath(Dir, kind, scenario)); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, out)
			}
		}
	}
	return missing
}

type scenario struct {
	name    string
	outputs []string // fixture names without version: switch-confirmed
	run     func(t *testing.T, rec *recording)
}

// scenarios are what the recorder runs, each recording some of
// recordedScenarios.
var scenarios = []scenario{
	{"walk", []string{"switch-first-resolution", "switch-confirmed"}, recordWalk},
	{"claim-race", []string{"switch-rolled-back", "release-waited-for-claim"}, recordClaimRace},
	{"recreated-target", []string{"switch-claim-refused"}, recordRecreatedTarget},
	{"abandoned-claim", []string{"switch-abandoned-claim"}, recordAbandonedClaim},
	{"release-at-once", []string{"release-at-once"}, recordReleaseAtOnce},
	{"release-waited", []string{"release-waited", "switch-confirmed-from-deleting"}, recordReleaseWaited},
	{"reresolve", []string{"switch-reresolve-up-to-date", "switch-reresolve-moved"}, recordReresolve},
	{"reresolve-while-running", []string{"switch-continued-as-new", "switch-after-continue-as-new"}, recordReresolveWhileRunning},
	{"observe-held", []string{"switch-open-at-observe"}, recordObserveHeld},
	{"rerun-landed", []string{"switch-rerun-landed"}, recordRerunLanded},
	{"rerun-rolled-back", []string{"switch-rerun-rolled-back"}, recordRerunRolledBack},
	{"rollout", []string{"rollout-completed", "rollout-halted", "rollout-resumed", "rollout-driven", "rollout-rolled-back", "rollout-awaited-clusters"}, recordRollout},
	{"operator", []string{"operator-requests"}, recordOperator},
}

func TestRecord(t *testing.T) {
	var outputs []string
	for _, sc := range scenarios {
		outputs = append(outputs, sc.outputs...)
	}
	require.ElementsMatch(t, recordedScenarios, outputs, "the scenarios record the fixtures (recordedScenarios), each once")
	wrote := 0
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rec := &recording{t: t, missing: map[string]bool{}}
			for _, out := range sc.outputs {
				fx := fixtureOf(t, out)
				if !recordsKind(fx.Kind) {
					t.Logf("not recording %s: the %s workflow's shape is that of v%d, whose fixtures stay (shapeVersions)", fx.Path, fx.Kind, shapeVersions[fx.Kind])
					continue
				}
				if _, err := os.Stat(fx.Path); errors.Is(err, fs.ErrNotExist) {
					rec.missing[out] = true
				} else {
					t.Logf("keeping %s: fixtures are never re-recorded", fx.Path)
				}
			}
			if len(rec.missing) == 0 {
				t.Skipf("every %s fixture of this scenario exists", Version)
			}
			sc.run(t, rec)
			rec.write()
			for out := range rec.missing {
				t.Errorf("the scenario did not record %s", out)
			}
			wrote += rec.wrote
		})
	}
	if wrote == 0 && !t.Failed() {
		t.Fatalf("nothing recorded: the %s fixtures of the selected scenarios exist, and fixtures are never re-recorded. "+
			"After changing a workflow, bump replay.Version and record again.", Version)
	}
}

// recording saves a scenario's histories, once the scenario has run to its
// end: a scenario that fails half-way writes nothing, so its fixtures are
// always of one run.
type recording struct {
	t       *testing.T
	missing map[string]bool
	runs    []recorded
	wrote   int
}

type recorded struct {
	name string
	h    *historypb.History
	exec Execution
}

func fixtureOf(t testing.TB, name string) Fixture {
	t.Helper()
	kind, scenario, ok := cut(name)
	require.True(t, ok, "fixture name %q", name)
	fx, err := ParseFixture(FixturePath(Dir, kind, scenario))
	require.NoError(t, err)
	return fx
}

func cut(name string) (kind, scenario string, ok bool) {
	kind, scenario, ok = strings.Cut(name, "-")
	if _, known := workflowTypes[kind]; !ok || !known || scenario == "" {
		return "", "", false
	}
	return kind, scenario, true
}

// save keeps a history of the run exec for the end of the scenario. It
// checks it at once with the ordering tests' checks, so a scenario that
// went wrong stops where it did.
func (r *recording) save(name string, h *historypb.History, exec Execution) {
	t := r.t
	t.Helper()
	if !r.missing[name] {
		return
	}
	t.Logf("%s from %s run %s: %s", name, exec.WorkflowID, exec.RunID, eventSummary(t, h))
	checkFixture(t, fixtureOf(t, name), exec, h)
	r.runs = append(r.runs, recorded{name: name, h: h, exec: exec})
}

// eventSummary lists a history's events, a local activity's marker by its
// activity type, for the log: what a scenario recorded, at a glance.
func eventSummary(t testing.TB, h *historypb.History) string {
	t.Helper()
	var out []string
	for _, e := range h.GetEvents() {
		what := strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_")
		switch a := e.GetAttributes().(type) {
		case *historypb.HistoryEvent_MarkerRecordedEventAttributes:
			if a.MarkerRecordedEventAttributes.GetMarkerName() == localActivityMarkerName {
				var m localActivityMarker
				decode(t, a.MarkerRecordedEventAttributes.GetDetails()["data"], &m)
				what = "LocalActivity:" + m.ActivityType
			} else {
				what = "Marker:" + a.MarkerRecordedEventAttributes.GetMarkerName()
			}
		case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
			what += ":" + a.ActivityTaskScheduledEventAttributes.GetActivityType().GetName()
		case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
			what += ":" + a.WorkflowExecutionSignaledEventAttributes.GetSignalName()
		case *historypb.HistoryEvent_WorkflowTaskFailedEventAttributes:
			what += ":" + a.WorkflowTaskFailedEventAttributes.GetCause().String()
		}
		out = append(out, fmt.Sprintf("%d %s", e.GetEventId(), what))
	}
	return strings.Join(out, ", ")
}

// write writes the saved histories (never over an existing file) and
// replays each written file with the current code.
func (r *recording) write() {
	t := r.t
	t.Helper()
	for _, run := range r.runs {
		fx := fixtureOf(t, run.name)
		path, err := WriteFixture(Dir, fx.Kind, fx.Scenario, run.exec, run.h)
		require.NoError(t, err)
		replayer, err := NewReplayer()
		require.NoError(t, err)
		if err := ReplayFixture(replayer, quiet, fx); err != nil {
			removeFixture(fx)
			t.Fatalf("%s does not replay: %v", path, err)
		}
		t.Logf("recorded %s (%d events) from %s run %s", path, len(run.h.Events), run.exec.WorkflowID, run.exec.RunID)
		delete(r.missing, run.name)
		r.wrote++
	}
}

// requireMove fails unless the switch of a history was started with the
// move from → to (by the starter).
func requireMove(t testing.TB, h *historypb.History, from, to string) {
	t.Helper()
	var in wfapi.SwitchInput
	startInput(t, h, &in)
	require.True(t, in.IsMove(), "a switch the starter started, with its move")
	require.Equal(t, from, in.From, "the switch's From")
	require.Equal(t, to, in.To, "the switch's To")
}

// recordWalk is the start of spec 001's walk (test/e2e's TestWalk): an
// unpinned pool takes the class default, then follows a newer default.
// Each switch is a run of the pool's switch workflow.
func recordWalk(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)
	id := recordedCluster.SwitchWorkflowID(ns, "counter")

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)
	first, firstRun := p.closedRun(t, id, "")
	requireMove(t, first, "", "gvisor-default")

	p.CreateAfterOthers(t, producttest.GVisorConfig("gvisor-default-v2", true))
	p.WaitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)
	second, secondRun := p.closedRun(t, id, p.nextRun(t, id, firstRun.RunID))
	requireMove(t, second, "gvisor-default", "gvisor-default-v2")

	// Each confirm recorded its event, once.
	p.WaitForEvents(t, ns, "counter", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default" to "gvisor-default-v2"`,
	})
	rec.save("switch-first-resolution", first, firstRun)
	rec.save("switch-confirmed", second, secondRun)
}

// racer settles the pool "racer" on "gvisor-now", creates "gvisor-next",
// repins the pool to it and returns once the switch is held at gate.
func racer(t *testing.T, p *product, gate *producttest.Gate, name string) (ns string, next *v1alpha1.SandboxConfig) {
	t.Helper()
	ctx := context.Background()
	ns = p.Env.Namespace(t)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-now", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, name, "gvisor-now")))
	p.WaitForConfig(t, ns, name, "gvisor-now", metav1.ConditionTrue)

	next = producttest.GVisorConfig("gvisor-next", false)
	require.NoError(t, p.Env.Kube.Create(ctx, next))
	producttest.Repin(t, p.Env.Kube, ns, name, "gvisor-next")
	gate.WaitReached(t)
	return ns, next
}

// recordClaimRace is the race the claim exists for (test/e2e's
// TestClaimRace): the target is deleted between the switch's claim and its
// live read. The switch is held once its (local) claim's write landed,
// before the claim's completion reaches it, inside its one workflow task;
// the target is deleted, the switch rolls back, and the release, which
// waited for the claim, lets the config go. (A switch held inside a local
// activity is inside a workflow task, and is not exported while running:
// see README.md; the running fixture is switch-open-at-observe.)
//
// The worker runs alone and the recorder plays the starter (racerByHand,
// wfapi.SignalRelease): the starter asks a running switch to re-plan when
// the pool comes to need another move, as the deletion makes it, and a
// signal that comes during the switch's one workflow task makes the server
// refuse that task's completion; the re-run yields (see
// switch-continued-as-new), and the run would record none of the race.
func recordClaimRace(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Claim", "gvisor-next")
	p := startWorkerAlone(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns, next := racerByHand(t, p, held, "racer") // protected and claimed, not yet read
	id := recordedCluster.SwitchWorkflowID(ns, "racer")
	running, _ := p.describe(t, id, "")

	require.NoError(t, p.Env.Kube.Delete(ctx, next))
	require.NoError(t, wfapi.SignalRelease(ctx, p.TemporalClient(), p.Scope(), "gvisor-next"))
	p.WaitForRelease(t, "gvisor-next", wfapi.OutcomeWaiting)
	held.Release()
	p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	rolled, run := p.closedRun(t, id, running)
	requireMove(t, rolled, "gvisor-now", "gvisor-next")
	rec.save("switch-rolled-back", rolled, run)

	// The starter's wake-up of the release once the claim is gone.
	require.NoError(t, wfapi.SignalRelease(ctx, p.TemporalClient(), p.Scope(), "gvisor-next"))
	p.WaitGone(t, next)
	release, releaseRun := p.closedRun(t, recordedCluster.ReleaseWorkflowID("gvisor-next"), "")
	rec.save("release-waited-for-claim", release, releaseRun)
}

// recordRecreatedTarget (test/e2e's TestRecreatedBeforeClaim): the
// target is deleted after the switch protected it and before its claim,
// released (nothing names it yet) and created again under the same name,
// without the finalizer. The claim finds it unprotected (its own check,
// live once the worker's cache no longer says so) and refuses it: the
// switch rolls back without reading (v3 recorded, with a worker's cache
// that still said protected, the other end of this race: the claim
// written, the live read finding the target unprotected, Protect again).
// The worker runs alone, as in recordClaimRace: the starter's re-plan
// signal at the deletion would come during the switch's one workflow task.
func recordRecreatedTarget(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateContaining("Claim", "gvisor-next")
	p := startWorkerAlone(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns, next := racerByHand(t, p, held, "racer") // protected, not yet claimed
	id := recordedCluster.SwitchWorkflowID(ns, "racer")
	running, _ := p.describe(t, id, "")

	require.NoError(t, p.Env.Kube.Delete(ctx, next))
	require.NoError(t, wfapi.SignalRelease(ctx, p.TemporalClient(), p.Scope(), "gvisor-next"))
	p.WaitGone(t, next)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-next", false)))
	held.Release()
	h, run := p.closedRun(t, id, running)
	requireMove(t, h, "gvisor-now", "gvisor-next")
	p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	rec.save("switch-claim-refused", h, run)
}

// startWorkerAlone runs the worker without the starter (the recorder plays
// the starter's part by hand).
func startWorkerAlone(t *testing.T, temporal tclient.Client, interceptors ...interceptor.WorkerInterceptor) *product {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	return &product{(&producttest.Product{
		Env: env, ClusterName: recordedCluster, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: temporal, Interceptors: interceptors, NoStarter: true,
	}).Run(t)}
}

// startByHand starts the pool's next switch as the starter does
// (starter.StartNext, planned from a live read), once the switch before
// it has ended.
func startByHand(t *testing.T, p *product, ns, name string) {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name}
	producttest.Eventually(t, "a switch of "+name+" to start", func() (bool, string) {
		started, err := starter.StartNext(context.Background(), p.Env.Kube, p.TemporalClient(), p.Scope(), key)
		if err != nil {
			return false, err.Error()
		}
		return started, "no move to start"
	})
}

// racerByHand is racer with the starter's part played by hand.
func racerByHand(t *testing.T, p *product, gate *producttest.Gate, name string) (ns string, next *v1alpha1.SandboxConfig) {
	t.Helper()
	ctx := context.Background()
	ns = p.Env.Namespace(t)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-now", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, name, "gvisor-now")))
	startByHand(t, p, ns, name)
	p.WaitForConfig(t, ns, name, "gvisor-now", metav1.ConditionTrue)

	next = producttest.GVisorConfig("gvisor-next", false)
	require.NoError(t, p.Env.Kube.Create(ctx, next))
	producttest.Repin(t, p.Env.Kube, ns, name, "gvisor-next")
	startByHand(t, p, ns, name)
	gate.WaitReached(t)
	return ns, next
}

// recordAbandonedClaim: a switch is stopped by hand (terminated) once its
// claim landed, and the pool is repinned to the config it is on. It needs
// no move, but holds a claim no switch works on: the starter starts a
// switch with no target, which clears the claim and wakes the claimed
// config's release.
func recordAbandonedClaim(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Claim", "gvisor-next")
	p := startProduct(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns, _ := racer(t, p, held, "stray") // claimed, not yet read
	id := recordedCluster.SwitchWorkflowID(ns, "stray")

	// Terminating a run does not stop its worker's workflow task: released,
	// the held task would go on to its Confirm and move the pool to
	// gvisor-next, leaving no claim to abandon. So the claim's run stays
	// held until the next run has abandoned the claim; its late Confirm then
	// finds no claim of its own and writes nothing. The repin comes first,
	// so that the starter's next start is the abandoning move.
	producttest.Repin(t, p.Env.Kube, ns, "stray", "gvisor-now")
	stopped, _ := p.describe(t, id, "")
	require.NoError(t, p.TemporalClient().TerminateWorkflow(ctx, id, stopped, "stopped by hand (replay recorder)"))
	h, run := p.closedRun(t, id, p.nextRun(t, id, stopped))
	held.Release()
	p.WaitForConfig(t, ns, "stray", "gvisor-now", metav1.ConditionTrue)

	var in wfapi.SwitchInput
	startInput(t, h, &in)
	require.Equal(t, "gvisor-next", in.Abandon, "the switch clears the stopped switch's claim")
	rec.save("switch-abandoned-claim", h, run)
}

// recordReleaseAtOnce: a config no pool names any more is deleted; its
// release removes the finalizer in its first look.
func recordReleaseAtOnce(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal, &cacheCaughtUp{config: "retired"})
	ctx := context.Background()
	ns := env.Namespace(t)

	retired := producttest.GVisorConfig("retired", false)
	require.NoError(t, p.Env.Kube.Create(ctx, retired))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("successor", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "mover", "retired")))
	p.WaitForConfig(t, ns, "mover", "retired", metav1.ConditionTrue)
	producttest.Repin(t, p.Env.Kube, ns, "mover", "successor")
	p.WaitForConfig(t, ns, "mover", "successor", metav1.ConditionTrue)

	require.NoError(t, p.Env.Kube.Delete(ctx, retired))
	p.WaitGone(t, retired)
	h, run := p.closedRun(t, recordedCluster.ReleaseWorkflowID("retired"), "")
	rec.save("release-at-once", h, run)
}

// cacheCaughtUp holds the release's look at the worker's cache of pools
// for config until the cache no longer lists a user of it. The cache lags
// the API server by a moment; a release that still found the pool that
// just moved off the config there would wait for it, which is another
// scenario. The history records only the look that found none.
type cacheCaughtUp struct {
	interceptor.WorkerInterceptorBase
	config string
}

func (c *cacheCaughtUp) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &cacheCaughtUpActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, config: c.config}
}

type cacheCaughtUpActivity struct {
	interceptor.ActivityInboundInterceptorBase
	config string
}

func (a *cacheCaughtUpActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if activity.GetInfo(ctx).ActivityType.Name != "CachedUsers" || len(in.Args) == 0 || in.Args[0] != a.config {
		return a.Next.ExecuteActivity(ctx, in)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := a.Next.ExecuteActivity(ctx, in)
		if users, ok := res.([]string); err != nil || !ok || len(users) == 0 || time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(50 * time.Millisecond) // polling the cache, with a deadline
	}
}

// recordReleaseWaited: a config is deleted while a pinned pool uses it; its
// release waits until the pool is repinned and moves off it (a switch from
// a config in deletion, which wakes the release), then lets it go.
func recordReleaseWaited(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)

	held := producttest.GVisorConfig("held", false)
	require.NoError(t, p.Env.Kube.Create(ctx, held))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("heir", false)))
	holder := producttest.Pool(ns, "holder", "held")
	require.NoError(t, p.Env.Kube.Create(ctx, holder))
	p.WaitForConfig(t, ns, "holder", "held", metav1.ConditionTrue)

	require.NoError(t, p.Env.Kube.Delete(ctx, held))
	p.WaitForRelease(t, "held", wfapi.OutcomeWaiting)
	waiting, _ := p.describe(t, recordedCluster.ReleaseWorkflowID("held"), "")
	p.WaitForConfig(t, ns, "holder", "held", metav1.ConditionFalse)
	// The holder's move is started by hand, the starter stopped: its
	// switch's WakeReleases is then the one wake-up of the release, which
	// looks, releases the config and completes. (The starter also wakes a
	// release when a pool's status stops naming its config: wake-ups that
	// land during the release's last look make it continue as new for
	// another look, which is right and makes the recorded run end
	// otherwise.)
	p.Stop(t)
	p.NoStarter = true
	p.Start(t)
	producttest.Repin(t, p.Env.Kube, ns, "holder", "heir")
	startByHand(t, p, ns, "holder")
	p.WaitForConfig(t, ns, "holder", "heir", metav1.ConditionTrue)
	p.WaitGone(t, held)

	release, releaseRun := p.closedRun(t, recordedCluster.ReleaseWorkflowID("held"), waiting)
	rec.save("release-waited", release, releaseRun)
	sw, swRun := p.closedRun(t, recordedCluster.SwitchWorkflowID(ns, "holder"), "")
	requireMove(t, sw, "held", "heir")
	rec.save("switch-confirmed-from-deleting", sw, swRun)
}

// recordReresolve: an operator asks for a re-resolution of a pool that
// needs nothing (wfapi.Reresolve, as the Go API does it): a switch with no
// input observes the pool and ends "up to date". Then, with the starter
// stopped, the class default changes and the operator asks again, from the
// CLI with no input at all, as the README writes it: the switch observes,
// plans the move and makes it.
func recordReresolve(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)
	id := recordedCluster.SwitchWorkflowID(ns, "traced")

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "traced", "")))
	p.WaitForConfig(t, ns, "traced", "gvisor-default", metav1.ConditionTrue)
	_, first := p.closedRun(t, id, "")

	require.NoError(t, wfapi.Reresolve(ctx, p.TemporalClient(), p.Scope(), ns, "traced", nil))
	upToDate, upToDateRun := p.closedRun(t, id, p.nextRun(t, id, first.RunID))
	rec.save("switch-reresolve-up-to-date", upToDate, upToDateRun)

	p.Stop(t)
	p.NoStarter = true
	p.Start(t)
	p.CreateAfterOthers(t, producttest.GVisorConfig("gvisor-default-v2", true))
	out, err := exec.Command(p.Env.TemporalCLI, "workflow", "signal-with-start", "--workflow-id", id, "--type", wfapi.SwitchWorkflow,
		"--task-queue", p.TaskQueue, "--signal-name", wfapi.SignalReresolve,
		"--address", p.Env.TemporalAddress, "--namespace", p.Env.TemporalNamespace).CombinedOutput()
	require.NoError(t, err, "temporal workflow signal-with-start: %s", out)
	moved, movedRun := p.closedRun(t, id, p.nextRun(t, id, upToDateRun.RunID))
	p.WaitForConfig(t, ns, "traced", "gvisor-default-v2", metav1.ConditionTrue)
	p.WaitForEvents(t, ns, "traced", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-default" to "gvisor-default-v2"`,
	})
	rec.save("switch-reresolve-moved", moved, movedRun)

	p.Stop(t)
	p.NoStarter = false
	p.Start(t)
}

// recordReresolveWhileRunning: a re-resolution is asked for while a switch
// runs, held inside its one workflow task once its claim landed. The
// signal comes during the task, so the server refuses the task's
// completion (its commands end the workflow, and a new event came); the
// task's writes stand (claim, confirm, event), its markers are dropped.
// The re-run finds the signal before its first Protect has ended and
// yields: it continues as new with no input, and the run it continues as
// observes the pool, which the refused task moved, and finds it up to
// date.
func recordReresolveWhileRunning(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Claim", "gvisor-next")
	p := startProduct(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns, _ := racer(t, p, held, "busy") // claimed, not yet read
	id := recordedCluster.SwitchWorkflowID(ns, "busy")

	running, _ := p.describe(t, id, "")
	require.NoError(t, wfapi.Reresolve(ctx, p.TemporalClient(), p.Scope(), ns, "busy", nil))
	held.Release()
	p.WaitForConfig(t, ns, "busy", "gvisor-next", metav1.ConditionTrue)

	continued, continuedRun := p.closedRun(t, id, running)
	requireMove(t, continued, "gvisor-now", "gvisor-next")
	after, afterRun := p.closedRun(t, id, p.nextRun(t, id, running))
	rec.save("switch-continued-as-new", continued, continuedRun)
	rec.save("switch-after-continue-as-new", after, afterRun)
}

// recordObserveHeld: an operator's re-resolution held in its Observe, the
// regular activity its first workflow task schedules, once the Observe has
// read the pool: at rest between its two workflow tasks, the one point
// where a switch rests (a move's steps all run inside one workflow
// task), it is exported running. Then the Observe completes and the switch
// finds the pool up to date.
func recordObserveHeld(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Observe", "looked-at")
	p := startProduct(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns := env.Namespace(t)
	id := recordedCluster.SwitchWorkflowID(ns, "looked-at")

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "looked-at", "")))
	p.WaitForConfig(t, ns, "looked-at", "gvisor-default", metav1.ConditionTrue)
	_, first := p.closedRun(t, id, "")

	require.NoError(t, wfapi.Reresolve(ctx, p.TemporalClient(), p.Scope(), ns, "looked-at", nil))
	held.WaitReached(t)
	open, run := p.openRun(t, id)
	require.NotEqual(t, first.RunID, run.RunID, "the operator's run, not the first switch")
	rec.save("switch-open-at-observe", open, run)

	held.Release()
	_, closed := p.closedRun(t, id, run.RunID)
	require.Equal(t, run, closed)
}

// nudgeSignal is a signal no workflow listens for: sent to a switch while
// its one workflow task runs, it makes the server refuse the task's
// completion (a new event came, and the task's commands end the run), as a
// worker that died inside the task would have it run again.
const nudgeSignal = "replay-recorder-nudge"

// recordRerunLanded: a switch's workflow task runs again after its Confirm
// landed (test/crashtest kills a worker there; the recorder makes the
// server refuse the task instead, with a signal nothing listens for, which
// leaves the same history but for the refused task's failure cause). The
// re-run's Claim finds the class on the target with its own run's stamp
// (Landed): the event, keyed by the run, and nothing else.
func recordRerunLanded(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Confirm", "gvisor-next")
	p := startProduct(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns, _ := racer(t, p, held, "again") // confirmed, the completion held
	id := recordedCluster.SwitchWorkflowID(ns, "again")
	running, _ := p.describe(t, id, "")

	require.NoError(t, p.TemporalClient().SignalWorkflow(ctx, id, running, nudgeSignal, nil))
	held.Release()
	h, run := p.closedRun(t, id, running)
	requireMove(t, h, "gvisor-now", "gvisor-next")
	p.WaitForConfig(t, ns, "again", "gvisor-next", metav1.ConditionTrue)
	p.WaitForEvents(t, ns, "again", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-now" to "gvisor-next"`,
	})
	rec.save("switch-rerun-landed", h, run)
}

// recordRerunRolledBack: the claim race (recordClaimRace, the worker
// alone), and the switch's workflow task runs again once its RollBack
// landed (the server refuses the task, as in recordRerunLanded). Before the
// re-run, the deleted target is released and created again, so the
// re-run's first Protect protects it; its Claim then finds the class on
// From, no claim, with its own run's stamp (RolledBack): the Warning of
// that roll back, keyed by the failure's appearance, and nothing else.
func recordRerunRolledBack(t *testing.T, rec *recording) {
	env := testenv.Current()
	claimed := producttest.NewGateAfterContaining("Claim", "gvisor-next")
	rolledBack := producttest.NewGateAfterContaining("RollBack", "gvisor-next")
	p := startWorkerAlone(t, env.Temporal, claimed, rolledBack)
	t.Cleanup(claimed.Release)
	t.Cleanup(rolledBack.Release)
	ctx := context.Background()
	ns, next := racerByHand(t, p, claimed, "twice") // protected and claimed, not yet read
	id := recordedCluster.SwitchWorkflowID(ns, "twice")
	running, _ := p.describe(t, id, "")

	require.NoError(t, p.Env.Kube.Delete(ctx, next))
	require.NoError(t, wfapi.SignalRelease(ctx, p.TemporalClient(), p.Scope(), "gvisor-next"))
	p.WaitForRelease(t, "gvisor-next", wfapi.OutcomeWaiting)
	claimed.Release()
	rolledBack.WaitReached(t) // rolled back, the completion held

	require.NoError(t, p.TemporalClient().SignalWorkflow(ctx, id, running, nudgeSignal, nil))
	require.NoError(t, wfapi.SignalRelease(ctx, p.TemporalClient(), p.Scope(), "gvisor-next"))
	p.WaitGone(t, next)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-next", false)))
	rolledBack.Release()
	h, run := p.closedRun(t, id, running)
	requireMove(t, h, "gvisor-now", "gvisor-next")
	p.WaitForConfig(t, ns, "twice", "gvisor-now", metav1.ConditionFalse)
	rec.save("switch-rerun-rolled-back", h, run)
}
