//go:build record

package replay

// The recorder. It runs only with the build tag `record`, which starts real
// servers; `make record-histories` runs it:
//
//	KUBEBUILDER_ASSETS=$PWD/bin ATE_TEMPORAL_CLI=$PWD/bin/temporal \
//		go test -tags record ./replay -run 'TestRecord/' -count=1 -v
//
// Each scenario drives the product (worker and starter in this process, on
// a fresh task queue) through the Kubernetes API, as a user does, exports
// the histories it names with GetWorkflowHistory, checks them with the
// ordering tests' checks, writes them with WriteFixture (which never
// overwrites) and replays the written file. A scenario whose fixtures of
// the current Version all exist is skipped.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

func TestMain(m *testing.M) {
	if missing := missingFixtures(); len(missing) == 0 {
		// Do not start servers to find that out.
		fmt.Fprintf(os.Stderr, "nothing to record: every %s fixture exists, and fixtures are never re-recorded. "+
			"After changing a workflow, bump replay.Version and record again.\n", Version)
		os.Exit(1)
	}
	os.Exit(testenv.Main(m, testenv.Options{}))
}

// missingFixtures lists the fixtures of the current Version no file holds.
func missingFixtures() []string {
	var missing []string
	for _, sc := range scenarios {
		for _, out := range sc.outputs {
			kind, scenario, _ := cut(out)
			if _, err := os.Stat(FixturePath(Dir, kind, scenario)); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, out)
			}
		}
	}
	return missing
}

// suggestContinueAsNewAt is the history length at which the recorder's
// second Temporal server suggests continue-as-new (the default is 4096
// events), so a pool continues as new after a few wake-ups.
const suggestContinueAsNewAt = 120

type scenario struct {
	name    string
	outputs []string // fixture names without version: pool-walk
	run     func(t *testing.T, rec *recording)
}

var scenarios = []scenario{
	{"walk", []string{"pool-walk", "switch-confirmed"}, recordWalk},
	{"claim-race", []string{"pool-open-mid-switch", "switch-open-at-claim", "switch-rolled-back", "release-waited-for-claim"}, recordClaimRace},
	{"release-at-once", []string{"release-at-once"}, recordReleaseAtOnce},
	{"release-waited", []string{"release-waited", "switch-confirmed-from-deleting", "pool-deleted"}, recordReleaseWaited},
	{"continue-as-new", []string{"pool-continued-as-new", "pool-after-continue-as-new"}, recordContinueAsNew},
}

func TestRecord(t *testing.T) {
	wrote := 0
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rec := &recording{t: t, missing: map[string]bool{}}
			for _, out := range sc.outputs {
				fx := fixtureOf(t, out)
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

// recording saves a scenario's histories.
type recording struct {
	t       *testing.T
	missing map[string]bool
	wrote   int
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
	for _, k := range []string{"pool", "switch", "release"} {
		if len(name) > len(k)+1 && name[:len(k)+1] == k+"-" {
			return k, name[len(k)+1:], true
		}
	}
	return "", "", false
}

// save checks a history with the ordering tests' checks, writes it (never
// over an existing file) and replays the written file with the current code.
func (r *recording) save(name string, h *historypb.History) {
	t := r.t
	t.Helper()
	if !r.missing[name] {
		return
	}
	fx := fixtureOf(t, name)
	checkFixture(t, fx, h)
	path, err := WriteFixture(Dir, fx.Kind, fx.Scenario, h)
	require.NoError(t, err)
	replayer, err := NewReplayer()
	require.NoError(t, err)
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(quiet, path); err != nil {
		_ = os.Remove(path)
		t.Fatalf("%s does not replay: %v", path, err)
	}
	t.Logf("recorded %s (%d events)", path, len(h.Events))
	delete(r.missing, name)
	r.wrote++
}

// recordWalk is spec 001's events example (internal/e2e's TestWalk): an
// unpinned pool follows the class default through five switches.
func recordWalk(t *testing.T, rec *recording) {
	env := testenv.Current()
	p := startProduct(t, env.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	v2 := producttest.GVisorConfig("gvisor-default-v2", true)
	p.CreateAfterOthers(t, v2)
	p.WaitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)

	producttest.SetDefault(t, p.Env.Kube, "gvisor-default-v2", false)
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	producttest.SetDefault(t, p.Env.Kube, "gvisor-default-v2", true)
	p.WaitForConfig(t, ns, "counter", "gvisor-default-v2", metav1.ConditionTrue)

	require.NoError(t, p.Env.Kube.Delete(ctx, v2))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)
	p.WaitGone(t, v2)
	p.closedHistory(t, wfapi.SwitchWorkflowID(ns, "counter", 5))

	// The pool workflow runs for the pool's life: export it at rest.
	rec.save("pool-walk", p.openHistory(t, wfapi.PoolWorkflowID(ns, "counter")))
	rec.save("switch-confirmed", p.closedHistory(t, wfapi.SwitchWorkflowID(ns, "counter", 2)))
}

// recordClaimRace is the race the claim exists for (internal/e2e's
// TestClaimRace): the target is deleted between the switch's claim and its
// live read. While the switch is held between the two, the pool and the
// switch are exported running; then the switch rolls back, and the release,
// which waited for the claim, lets the config go.
//
// v1 held the ReadConfig activity before it ran. Since v2 the live read is
// a local activity, which, held, keeps the switch inside a workflow task:
// exported there, the history ends with that task's start, and the SDK's
// replayer does not check the commands of a history's last completed task
// when a started one follows it, so such a fixture would check nothing of
// the switch. v2 holds the claim's completion instead, once its write has
// landed: the same point of the race (claimed, not yet read), with the
// switch at rest, waiting for its Claim activity.
func recordClaimRace(t *testing.T, rec *recording) {
	env := testenv.Current()
	held := producttest.NewGateAfterContaining("Claim", "gvisor-next")
	p := startProduct(t, env.Temporal, held)
	t.Cleanup(held.Release)
	ctx := context.Background()
	ns := env.Namespace(t)

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-now", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "racer", "gvisor-now")))
	p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionTrue)

	next := producttest.GVisorConfig("gvisor-next", false)
	require.NoError(t, p.Env.Kube.Create(ctx, next))
	producttest.Repin(t, p.Env.Kube, ns, "racer", "gvisor-next")
	held.WaitReached(t) // protected and claimed, not yet read

	sw := wfapi.SwitchWorkflowID(ns, "racer", 2)
	rec.save("switch-open-at-claim", p.openHistory(t, sw))
	rec.save("pool-open-mid-switch", p.openHistory(t, wfapi.PoolWorkflowID(ns, "racer")))

	require.NoError(t, p.Env.Kube.Delete(ctx, next))
	p.WaitForRelease(t, "gvisor-next", wfapi.OutcomeWaiting)
	held.Release()
	p.WaitForConfig(t, ns, "racer", "gvisor-now", metav1.ConditionFalse)
	p.WaitGone(t, next)

	rec.save("switch-rolled-back", p.closedHistory(t, sw))
	rec.save("release-waited-for-claim", p.closedHistory(t, wfapi.ReleaseWorkflowID("gvisor-next")))
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
	rec.save("release-at-once", p.closedHistory(t, wfapi.ReleaseWorkflowID("retired")))
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
// a config in deletion, which wakes the release), then lets it go. Then the
// pool is deleted, which ends its workflow.
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
	p.WaitForConfig(t, ns, "holder", "held", metav1.ConditionFalse)
	producttest.Repin(t, p.Env.Kube, ns, "holder", "heir")
	p.WaitForConfig(t, ns, "holder", "heir", metav1.ConditionTrue)
	p.WaitGone(t, held)

	rec.save("release-waited", p.closedHistory(t, wfapi.ReleaseWorkflowID("held")))
	rec.save("switch-confirmed-from-deleting", p.closedHistory(t, wfapi.SwitchWorkflowID(ns, "holder", 2)))

	require.NoError(t, p.Env.Kube.Delete(ctx, holder))
	rec.save("pool-deleted", p.closedHistory(t, wfapi.PoolWorkflowID(ns, "holder")))
}

// recordContinueAsNew runs a pool on a second Temporal server that suggests
// continue-as-new after suggestContinueAsNewAt events, and wakes it until
// it continues as new. It exports the run that continued and the run it
// started, at rest.
func recordContinueAsNew(t *testing.T, rec *recording) {
	env := testenv.Current()
	short, err := testenv.Start(testenv.Options{
		NoKube: true,
		TemporalDynamicConfig: map[string]string{
			"limit.historyCount.suggestContinueAsNew": strconv.Itoa(suggestContinueAsNewAt),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, short.Stop()) })

	p := startProduct(t, short.Temporal)
	ctx := context.Background()
	ns := env.Namespace(t)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-long", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "long-lived", "gvisor-long")))
	p.WaitForConfig(t, ns, "long-lived", "gvisor-long", metav1.ConditionTrue)

	id := wfapi.PoolWorkflowID(ns, "long-lived")
	p.openHistory(t, id) // the first pass is done
	first, _ := p.describe(t, id, "")
	signals := 0
	producttest.Eventually(t, id+" to continue as new", func() (bool, string) {
		run, _ := p.describe(t, id, "")
		if run != first {
			return true, ""
		}
		require.NoError(t, p.TemporalClient().SignalWorkflow(ctx, id, "", wfapi.SignalReresolve, nil))
		signals++
		time.Sleep(150 * time.Millisecond)
		return false, strconv.Itoa(signals) + " reresolve signals sent"
	})
	t.Logf("continued as new after %d reresolve signals", signals)

	old := p.history(t, id, first)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, lastEvent(old).GetEventType())
	rec.save("pool-continued-as-new", old)
	next := p.openHistory(t, id)
	require.Equal(t, first, next.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId())
	rec.save("pool-after-continue-as-new", next)
}
