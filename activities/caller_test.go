package activities

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// Confirm and RollBack write only while the class's pendingConfigRef names
// their config: a claim another writer displaced, confirmed or cleared is
// superseded, and nothing is written. Their own retries still land once.
func TestSettleOnlyWhileTheClaimStands(t *testing.T) {
	ctx := context.Background()
	claim := func(config string) func(t *testing.T, f *statusFixture) {
		return func(t *testing.T, f *statusFixture) {
			_, err := f.acts.Claim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: config})
			require.NoError(t, err)
		}
	}
	confirm := SettleInput{Class: gvisor, Config: "new", Generation: 2, Claimed: true}
	rollBack := SettleInput{Class: gvisor, Config: "new", Generation: 2, Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "deleting", Claimed: true}
	// A roll back after a refused Protect, of a move planned from from
	// (and, with expectRun, from the class last written by fromRun).
	noClaim := func(from string, expectRun bool, fromRun string) SettleInput {
		r := rollBack
		r.Claimed, r.From, r.ExpectRun, r.FromRun = false, from, expectRun, fromRun
		return r
	}
	tests := []struct {
		name       string
		before     []func(t *testing.T, f *statusFixture)
		confirm    bool
		in         SettleInput
		superseded bool
		wantConfig string
		wantPend   string
	}{
		{name: "confirm of a standing claim", before: nil, confirm: true, in: confirm, wantConfig: "new"},
		{name: "confirm of a claim another switch displaced", before: nil, confirm: true, in: confirm,
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "confirm of a claim another switch cleared", confirm: true, in: confirm,
			superseded: true, wantConfig: "old"},
		{name: "roll back of a standing claim", in: rollBack, wantConfig: "old"},
		{name: "roll back of a claim another switch displaced", in: rollBack,
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "roll back with no claim (protection refused) of a class as planned writes its condition", in: noClaim("old", false, ""),
			wantConfig: "old"},
		{name: "roll back with no claim of a class holding another claim writes nothing", in: noClaim("old", false, ""),
			superseded: true, wantConfig: "old", wantPend: "other"},
		{name: "roll back with no claim of a class off its plan's From writes nothing", in: noClaim("older", false, ""),
			superseded: true, wantConfig: "old"},
		{name: "roll back with no claim of a class another run wrote since the plan writes nothing", in: noClaim("old", true, "run-0"),
			superseded: true, wantConfig: "old"},
	}
	// The state before each settle: "new" claimed, then changed by the
	// case's other writer.
	tests[0].before = []func(*testing.T, *statusFixture){claim("new")}
	tests[1].before = []func(*testing.T, *statusFixture){claim("new"), claim("other")}
	tests[2].before = []func(*testing.T, *statusFixture){claim("new"), func(t *testing.T, f *statusFixture) {
		_, err := f.acts.AbandonClaim(ctx, ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"})
		require.NoError(t, err)
	}}
	tests[3].before = []func(*testing.T, *statusFixture){claim("new")}
	tests[4].before = []func(*testing.T, *statusFixture){claim("new"), claim("other")}
	tests[6].before = []func(*testing.T, *statusFixture){claim("other")}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			for _, b := range tt.before {
				b(t, f)
			}
			in := tt.in
			in.Pool = f.ref
			settle := f.acts.RollBack
			if tt.confirm {
				settle = f.acts.Confirm
			}
			before := f.pool(t)
			res, err := settle(ctx, in)
			require.NoError(t, err)
			require.Equal(t, tt.superseded, res.Outcome == Superseded)
			got := f.pool(t)
			if tt.superseded {
				require.False(t, res.Wrote)
				require.Equal(t, before.ResourceVersion, got.ResourceVersion, "a superseded settle writes nothing")
			} else {
				require.True(t, res.Wrote)
				// A retry (the completion lost) writes nothing more and is
				// not taken for a takeover.
				again, err := settle(ctx, in)
				require.NoError(t, err)
				require.False(t, again.Wrote)
				require.Equal(t, Written, again.Outcome, "a retry of a landed settle is not superseded")
			}
			st := got.Status.ClassStatus(gvisor)
			require.Equal(t, tt.wantConfig, st.ConfigRef.NameOf())
			require.Equal(t, tt.wantPend, st.PendingConfigRef.NameOf())
			if !tt.superseded && !tt.confirm {
				c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
				require.NotNil(t, c)
				require.Equal(t, metav1.ConditionFalse, c.Status)
			}
		})
	}
}

// TestCallerChecks: a pool's status and events are written for its switch
// only, a rollout's status and Warnings for the config's rollout only;
// every other caller (another pool's switch, another config's rollout,
// a release, the operator, an ID of no product workflow or of no cluster)
// is refused as invalid input naming the workflow and the object.
func TestCallerChecks(t *testing.T) {
	c := wfapi.Cluster("c1")
	pool := switchOf(wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"})
	rollout := rolloutOf("cfg")
	tests := []struct {
		name string
		id   string
		want allowedCaller
		err  string // "" when allowed
	}{
		{name: "the pool's switch", id: c.SwitchWorkflowID("ns", "pool"), want: pool},
		{name: "the pool's switch of another cluster (ClusterGuard's to refuse)", id: wfapi.Cluster("c2").SwitchWorkflowID("ns", "pool"), want: pool},
		{name: "another pool's switch", id: c.SwitchWorkflowID("ns", "other"), want: pool,
			err: `workflow "c1/workerpool/ns/other/switch" may not write WorkerPool ns/pool: a workflow acts only on the pool its ID names`},
		{name: "another namespace's switch", id: c.SwitchWorkflowID("other", "pool"), want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "a pool whose name begins the same", id: c.SwitchWorkflowID("ns", "pool-2"), want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "a switch with no cluster", id: "workerpool/ns/pool/switch", want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "a numbered switch", id: "c1/workerpool/ns/pool/switch/3", want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "another workflow of the pool", id: "c1/workerpool/ns/pool/attack", want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "a release", id: c.ReleaseWorkflowID("pool"), want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "the config's rollout, for a pool", id: c.RolloutWorkflowID("cfg"), want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "the operator", id: c.OperatorWorkflowID(), want: pool, err: "may not write WorkerPool ns/pool"},
		{name: "a name made up", id: "my-switch", want: pool, err: `workflow "my-switch" may not write WorkerPool ns/pool`},

		{name: "the config's rollout", id: c.RolloutWorkflowID("cfg"), want: rollout},
		{name: "another config's rollout", id: c.RolloutWorkflowID("other"), want: rollout,
			err: `the rollout workflow of SandboxConfig "cfg" has the ID <cluster>/sandboxconfig/cfg/rollout; got "c1/sandboxconfig/other/rollout"`},
		{name: "the config's release", id: c.ReleaseWorkflowID("cfg"), want: rollout, err: `got "c1/sandboxconfig/cfg/release"`},
		{name: "a rollout's gate", id: c.RolloutWorkflowID("cfg") + "/gate/1-0", want: rollout, err: `got "c1/sandboxconfig/cfg/rollout/gate/1-0"`},
		{name: "a switch, for a rollout", id: c.SwitchWorkflowID("ns", "cfg"), want: rollout, err: "the rollout workflow of SandboxConfig \"cfg\""},
		{name: "a rollout with no cluster", id: "sandboxconfig/cfg/rollout", want: rollout, err: "the rollout workflow of SandboxConfig \"cfg\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.want.refusal(Caller{WorkflowRef: wfapi.ParseWorkflowID(tt.id), RunID: "run-1"})
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			requireInvalidInput(t, err, tt.err)
		})
	}
}

// TestCheckCallerOutsideAnActivity: a unit test calling an activity's
// method has no caller to check; an input that can name nothing is
// refused all the same.
func TestCheckCallerOutsideAnActivity(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, checkCaller(ctx, switchOf(wfapi.PoolRef{Namespace: "ns", Name: "pool"})))
	require.NoError(t, checkCaller(ctx, rolloutOf("cfg")))
	requireInvalidInput(t, checkCaller(ctx, switchOf(wfapi.PoolRef{Name: "pool"})), "a WorkerPool reference needs a namespace and a name")
	requireInvalidInput(t, checkCaller(ctx, rolloutOf("")), "a rollout activity names its SandboxConfig")

	// A caller handed in by ClusterGuard is the one checked.
	ctx = withCaller(ctx, Caller{WorkflowRef: wfapi.ParseWorkflowID(wfapi.Cluster("c1").SwitchWorkflowID("ns", "other"))})
	requireInvalidInput(t, checkCaller(ctx, switchOf(wfapi.PoolRef{Namespace: "ns", Name: "pool"})), "may not write WorkerPool ns/pool")
}

// callActivity is a workflow of another type than the product's (anyone
// who can run a worker in the namespace can write one): it schedules one
// of the product's activities, by name, allowing it three attempts.
func callActivity(ctx workflow.Context, name string, arg any) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3},
	})
	return workflow.ExecuteActivity(ctx, name, arg).Get(ctx, nil)
}

// attempts is an interceptor after ClusterGuard: it counts each activity's
// attempts, and those that found the caller ClusterGuard parsed in their
// context.
type attempts struct {
	interceptor.WorkerInterceptorBase
	mu     sync.Mutex
	ran    map[string]int
	parsed map[string]int
}

func (a *attempts) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &attemptsActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, a: a}
}

type attemptsActivity struct {
	interceptor.ActivityInboundInterceptorBase
	a *attempts
}

func (i *attemptsActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	name := activity.GetInfo(ctx).ActivityType.Name
	i.a.mu.Lock()
	i.a.ran[name]++
	if _, ok := ctx.Value(callerKey{}).(Caller); ok {
		i.a.parsed[name]++
	}
	i.a.mu.Unlock()
	return i.Next.ExecuteActivity(ctx, in)
}

// TestTheWorkerChecksEachCallerOnce: through a worker with ClusterGuard, an
// activity asked for an object its caller's ID does not name is refused on
// its first attempt, not retried, and reads and writes nothing; the
// caller it is refused for is the one ClusterGuard parsed. The caller its
// ID names is let through.
func TestTheWorkerChecksEachCallerOnce(t *testing.T) {
	c := wfapi.Cluster("c1")
	event := events.PoolEvent{Pool: wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"}, Type: corev1.EventTypeNormal,
		Reason: "SandboxConfigSwitched", Key: "switch/run-1", Note: "n"}
	tests := []struct {
		name     string
		id       string
		activity string
		arg      func(f *statusFixture) any
		err      string // "" when let through
	}{
		{name: "a Claim for another pool", id: c.SwitchWorkflowID("ns", "other"), activity: "Claim",
			arg: func(f *statusFixture) any { return ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"} },
			err: `workflow "c1/workerpool/ns/other/switch" may not write WorkerPool ns/pool`},
		{name: "a Confirm from a release", id: c.ReleaseWorkflowID("new"), activity: "Confirm",
			arg: func(f *statusFixture) any {
				return SettleInput{Pool: f.ref, Class: gvisor, Config: "new", Generation: 2}
			},
			err: `workflow "c1/sandboxconfig/new/release" may not write WorkerPool ns/pool`},
		{name: "an event for another pool", id: c.SwitchWorkflowID("ns", "other"), activity: "RecordEvent",
			arg: func(*statusFixture) any { return event },
			err: `workflow "c1/workerpool/ns/other/switch" may not write WorkerPool ns/pool`},
		{name: "a rollout status for another config", id: c.RolloutWorkflowID("other"), activity: "SetRolloutStatus",
			arg: func(*statusFixture) any { return RolloutStatusInput{Config: "cfg", Phase: "Completed"} },
			err: `the rollout workflow of SandboxConfig "cfg" has the ID`},
		{name: "a read of other clusters' rollouts for another config", id: c.RolloutWorkflowID("other"), activity: "AwaitClusters",
			arg: func(*statusFixture) any {
				return AwaitClustersInput{Config: "cfg", Seen: []rollout.ClusterRollout{{Cluster: "c2"}}}
			},
			err: `the rollout workflow of SandboxConfig "cfg" has the ID`},
		{name: "the pool's own switch claims", id: c.SwitchWorkflowID("ns", "pool"), activity: "Claim",
			arg: func(f *statusFixture) any { return ClaimInput{Pool: f.ref, Class: gvisor, Config: "new"} }},
		{name: "the pool's own switch records its event", id: c.SwitchWorkflowID("ns", "pool"), activity: "RecordEvent",
			arg: func(*statusFixture) any { return event }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStatusFixture(t)
			events := fake.NewClientset()
			f.acts.Clientset = events
			before := f.pool(t)
			count := &attempts{ran: map[string]int{}, parsed: map[string]int{}}

			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{ClusterGuard(c), count}})
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: tt.id})
			env.RegisterWorkflowWithOptions(callActivity, workflow.RegisterOptions{Name: "callActivity"})
			env.RegisterActivity(f.acts)
			env.ExecuteWorkflow("callActivity", tt.activity, tt.arg(f))
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()

			require.Equal(t, 1, count.ran[tt.activity], "one attempt")
			require.Equal(t, 1, count.parsed[tt.activity], "the caller ClusterGuard parsed reached the activity")
			recorded, lerr := events.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, lerr)
			if tt.err == "" {
				require.NoError(t, err)
				require.Equal(t, 1, f.calls.StatusWrites+len(recorded.Items), "the write is made")
				if last := f.pool(t).Status.ClassStatus(gvisor).LastSwitch; f.calls.StatusWrites > 0 {
					require.Equal(t, tt.id, last.WorkflowID, "stamped with the caller's run")
					require.NotEmpty(t, last.RunID)
				}
				return
			}
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app), "an application error, got %v", err)
			require.True(t, app.NonRetryable())
			require.Equal(t, ErrInvalidInput, app.Type())
			require.ErrorContains(t, err, tt.err)
			require.Zero(t, f.calls.Gets, "nothing read")
			require.Zero(t, f.calls.StatusWrites, "nothing written")
			require.Equal(t, before.ResourceVersion, f.pool(t).ResourceVersion)
			require.Empty(t, recorded.Items, "no event")
		})
	}
}
