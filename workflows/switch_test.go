package workflows

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// newEnv is a Temporal test environment with the workflows and activities
// registered and the order of started regular activities recorded.
func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]string) {
	t.Helper()
	env, regular, _ := newTestEnv(t)
	// Under the release ID of "cfg", which the release tests release;
	// a switch runs under its own (executeSwitch).
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.ReleaseWorkflowID("cfg")})
	return env, regular
}

// newSwitchEnv is newEnv recording every activity, regular and local, in
// one order, a local one as local(name): what a switch runs, and how.
func newSwitchEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]string) {
	t.Helper()
	env, _, all := newTestEnv(t)
	return env, all
}

func newTestEnv(t *testing.T) (env *testsuite.TestWorkflowEnvironment, regular, all *[]string) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env = s.NewTestWorkflowEnvironment()
	RegisterWorkflows(env)
	RegisterActivities(env, &activities.Activities{})
	regular, all = &[]string{}, &[]string{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		*regular = append(*regular, info.ActivityType.Name)
		*all = append(*all, info.ActivityType.Name)
	})
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		*all = append(*all, local(info.ActivityType.Name))
	})
	return env, regular, all
}

// rolledBackNow is what a RollBack that rolled back answers: the
// appearance of the failure its Warning is keyed by.
func rolledBackNow() *activities.PoolWrite {
	return &activities.PoolWrite{Outcome: activities.Written, FailingSince: &metav1.Time{Time: time.Unix(1700000000, 0)}}
}

func local(activity string) string { return activity + " (local)" }

// moveSteps says how a switch runs the given steps: every one as a local
// activity, in the switch's one workflow task.
func moveSteps(steps ...string) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = local(s)
	}
	return out
}

var switchIn = wfapi.SwitchInput{
	Pool:  wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"},
	Class: v1alpha1.SandboxClassGVisor, From: "old", To: "new", Generation: 3, PoolResourceVersion: "7",
}

// executeSwitch runs a switch under its pool's switch ID.
func executeSwitch(env *testsuite.TestWorkflowEnvironment, in wfapi.SwitchInput) {
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testCluster.SwitchWorkflowID("ns", "pool")})
	env.ExecuteWorkflow(wfapi.SwitchWorkflow, in)
}

// runSwitch runs a switch under its pool's switch ID and returns how it
// ended.
func runSwitch(t *testing.T, env *testsuite.TestWorkflowEnvironment, in wfapi.SwitchInput) (*wfapi.SwitchResult, error) {
	t.Helper()
	executeSwitch(env, in)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res wfapi.SwitchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return &res, nil
}

func liveConfig(name string, deleting bool) *resolve.Config {
	return &resolve.Config{Name: name, Class: v1alpha1.SandboxClassGVisor, Deleting: deleting, Protected: true}
}

// confirmAgainst answers as Confirm does when its live read of the target
// finds the configs given, one a call (the last one again after that): it
// refuses a target that is missing, of another class, in deletion or
// unprotected, with nothing written, and writes otherwise.
func confirmAgainst(live ...*resolve.Config) func(context.Context, activities.SettleInput) (*activities.PoolWrite, error) {
	calls := 0
	return func(_ context.Context, in activities.SettleInput) (*activities.PoolWrite, error) {
		c := live[min(calls, len(live)-1)]
		calls++
		ok, reason, message := resolve.CheckTarget(in.Config, c, in.Class)
		if ok && !c.Protected {
			ok, reason, message = false, v1alpha1.ReasonSandboxConfigNotProtected, fmt.Sprintf("SandboxConfig %q does not carry the finalizer", in.Config)
		}
		if !ok {
			return &activities.PoolWrite{Outcome: activities.Refused, Refusal: &activities.TargetCheck{Reason: reason, Message: message}}, nil
		}
		return &activities.PoolWrite{Outcome: activities.Written}, nil
	}
}

func TestSwitchRunsItsActivitiesInOrder(t *testing.T) {
	tests := []struct {
		name      string
		protect   activities.TargetCheck
		live      *resolve.Config
		want      []string
		outcome   string
		eventType string
		note      string
	}{
		{
			name:    "confirmed",
			protect: activities.TargetCheck{OK: true},
			live:    liveConfig("new", false),
			want:    []string{"Protect", "Claim", "Confirm", "RecordEvent"},
			outcome: wfapi.OutcomeConfirmed, eventType: "Normal",
			note: `sandbox class "gvisor" switched from SandboxConfig "old" to "new"`,
		},
		{
			name:    "deleted between claim and confirm: rolled back",
			protect: activities.TargetCheck{OK: true},
			live:    liveConfig("new", true),
			want:    []string{"Protect", "Claim", "Confirm", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" is being deleted; keeping "old"`,
		},
		{
			name:    "gone between claim and confirm: rolled back",
			protect: activities.TargetCheck{OK: true},
			live:    nil,
			want:    []string{"Protect", "Claim", "Confirm", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" not found; keeping "old"`,
		},
		{
			name:    "recreated under the same name between protect and claim: protected again, confirmed",
			protect: activities.TargetCheck{OK: true},
			live:    &resolve.Config{Name: "new", Class: v1alpha1.SandboxClassGVisor},
			want:    []string{"Protect", "Claim", "Confirm", "Protect", "Confirm", "RecordEvent"},
			outcome: wfapi.OutcomeConfirmed, eventType: "Normal",
			note: `sandbox class "gvisor" switched from SandboxConfig "old" to "new"`,
		},
		{
			name:    "refused by the finalizer step: rolled back without a claim",
			protect: activities.TargetCheck{Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "new" is being deleted`},
			want:    []string{"Protect", "RollBack", "RecordEvent"},
			outcome: wfapi.OutcomeRolledBack, eventType: "Warning",
			note: `SandboxConfig "new" is being deleted; keeping "old"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			want := moveSteps(tt.want...)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&tt.protect, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
			answers := []*resolve.Config{tt.live}
			if tt.live != nil && !tt.live.Protected {
				again := *tt.live
				again.Protected = true // by the Protect after the refusal
				answers = append(answers, &again)
			}
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(confirmAgainst(answers...))
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Message == tt.note && in.Config == "new"
			})).Return(rolledBackNow(), nil)
			var event events.PoolEvent
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in events.PoolEvent) error {
				event = in
				return nil
			})

			executeSwitch(env, switchIn)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res wfapi.SwitchResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tt.outcome, res.Outcome)
			require.Equal(t, want, *order)
			require.Equal(t, tt.eventType, event.Type)
			require.Equal(t, tt.note, event.Note)
		})
	}
}

func TestSwitchFirstResolutionEventNamesOneConfig(t *testing.T) {
	env, _ := newEnv(t)
	in := switchIn
	in.From = ""
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.MatchedBy(func(in events.PoolEvent) bool {
		return in.Reason == v1alpha1.EventReasonSandboxConfigSwitched && in.Note == `sandbox class "gvisor" uses SandboxConfig "new"`
	})).Return(nil).Once()
	executeSwitch(env, in)
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}

func TestSwitchRetriesAFailedClaim(t *testing.T) {
	env, order := newSwitchEnv(t)
	want := moveSteps("Protect", "Claim", "Claim", "Claim", "Confirm", "RecordEvent")
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(nil, errors.New("conflict: the object has been modified")).Twice()
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil).Once()
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil).Once()
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil).Once()

	executeSwitch(env, switchIn)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, want, *order)
	env.AssertExpectations(t)
}

// TestSwitchRetriesAFailingLocalStepForever: a local step that keeps
// failing is retried, in the workflow task for its first 8 s (six attempts),
// then as a regular activity, which the server retries without adding
// history events, until it succeeds; the switch never gives up, and no
// later step runs before it. (The test environment caps a regular
// activity's attempts at 10; the server does not.)
func TestSwitchRetriesAFailingLocalStepForever(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		regular  int // the attempts made as a regular activity
	}{
		// 0.2 s doubling: every retry inside the workflow task.
		{name: "a few failures", failures: 3},
		// Six local attempts in 6.2 s, then the server's retries.
		{name: "failures for minutes", failures: 12, regular: 12 - 6 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(nil, errors.New("the API server is unavailable")).Times(tt.failures)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil).Once()
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil).Once()

			executeSwitch(env, switchIn)
			require.NoError(t, env.GetWorkflowError())
			want := []string{local("Protect"), local("Claim")}
			for i := range tt.failures + 1 {
				if i < tt.failures+1-tt.regular {
					want = append(want, local("Confirm"))
				} else {
					want = append(want, "Confirm")
				}
			}
			require.Equal(t, append(want, local("RecordEvent")), *order)
			env.AssertExpectations(t)
		})
	}
}

func TestSwitchWakesTheReleaseOfAConfigInDeletion(t *testing.T) {
	env, order := newSwitchEnv(t)
	want := moveSteps("Protect", "Claim", "Confirm", "RecordEvent", "WakeReleases")
	in := switchIn
	in.FromDeleting = true
	env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
	env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
	env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(act.WakeReleases, mock.Anything, activities.WakeInput{Pool: in.Pool, Configs: []string{"old"}}).Return(nil).Once()
	executeSwitch(env, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, want, *order)
	env.AssertExpectations(t)
}

// TestSwitchRecordsAMoveWhoseConfirmWasLost: a confirm retried after its
// first attempt's write landed (and its completion was lost with the
// worker) finds the pool gone; the move happened, so its event is still
// recorded. A confirm that never wrote records nothing.
func TestSwitchRecordsAMoveWhoseConfirmWasLost(t *testing.T) {
	tests := []struct {
		name    string
		outcome activities.WriteOutcome
		want    []string
	}{
		{name: "landed before the pool went", outcome: activities.LandedThenGone, want: []string{"Protect", "Claim", "Confirm", "RecordEvent"}},
		{name: "never landed", outcome: activities.PoolGone, want: []string{"Protect", "Claim", "Confirm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			want := moveSteps(tt.want...)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: tt.outcome}, nil)
			env.OnActivity(act.RecordEvent, mock.Anything, mock.MatchedBy(func(in events.PoolEvent) bool {
				return in.Reason == v1alpha1.EventReasonSandboxConfigSwitched
			})).Return(nil).Maybe()
			executeSwitch(env, switchIn)
			require.NoError(t, env.GetWorkflowError())
			var res wfapi.SwitchResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, wfapi.OutcomePoolGone, res.Outcome)
			require.Equal(t, want, *order)
		})
	}
}

func TestSwitch(t *testing.T) {
	tests := []struct {
		name    string
		claim   activities.PoolWrite
		live    *resolve.Config
		rolled  activities.PoolWrite
		want    []string
		outcome string
		event   string
	}{
		{
			name:    "confirmed: every step local, in one workflow task",
			claim:   activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"},
			live:    liveConfig("new", false),
			want:    []string{local("Protect"), local("Claim"), local("Confirm"), local("RecordEvent")},
			outcome: wfapi.OutcomeConfirmed, event: v1alpha1.EventReasonSandboxConfigSwitched,
		},
		{
			name:    "deleted between claim and confirm: rolled back",
			claim:   activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"},
			live:    liveConfig("new", true),
			rolled:  *rolledBackNow(),
			want:    []string{local("Protect"), local("Claim"), local("Confirm"), local("RollBack"), local("RecordEvent")},
			outcome: wfapi.OutcomeRolledBack, event: v1alpha1.ReasonSandboxConfigDeleting,
		},
		{
			name:    "a re-run of the task finds its earlier confirm: the move stands and is reported",
			claim:   activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"},
			live:    liveConfig("new", true),
			rolled:  activities.PoolWrite{Outcome: activities.Landed},
			want:    []string{local("Protect"), local("Claim"), local("Confirm"), local("RollBack"), local("RecordEvent")},
			outcome: wfapi.OutcomeConfirmed, event: v1alpha1.EventReasonSandboxConfigSwitched,
		},
		{
			name:    "a re-run's claim finds the run's own confirm: the event, nothing written",
			claim:   activities.PoolWrite{Outcome: activities.Landed, ResourceVersion: "9"},
			want:    []string{local("Protect"), local("Claim"), local("RecordEvent")},
			outcome: wfapi.OutcomeConfirmed, event: v1alpha1.EventReasonSandboxConfigSwitched,
		},
		{
			name: "a re-run's claim finds the run's own roll back: its Warning, nothing written",
			claim: activities.PoolWrite{ResourceVersion: "9", Outcome: activities.RolledBack, Earlier: &activities.EarlierRollBack{
				Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `deleting; keeping "old"`, FailingSince: &metav1.Time{Time: time.Unix(1700000000, 0)}}},
			want:    []string{local("Protect"), local("Claim"), local("RecordEvent")},
			outcome: wfapi.OutcomeRolledBack, event: v1alpha1.ReasonSandboxConfigDeleting,
		},
		{
			name:    "superseded: the class moved since the starter looked; nothing else is done",
			claim:   activities.PoolWrite{Outcome: activities.Superseded},
			want:    []string{local("Protect"), local("Claim")},
			outcome: wfapi.OutcomeSuperseded,
		},
		{
			name:    "the pool is gone",
			claim:   activities.PoolWrite{Outcome: activities.PoolGone},
			want:    []string{local("Protect"), local("Claim")},
			outcome: wfapi.OutcomePoolGone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, order := newSwitchEnv(t)
			env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
			env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool {
				return in.ExpectFrom && in.From == "old" && in.ResourceVersion == "7" && in.ExpectRun && in.FromRun == "run-0"
			})).Return(&tt.claim, nil)
			env.OnActivity(act.Confirm, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Claimed && in.ResourceVersion == "8"
			})).Return(confirmAgainst(tt.live))
			env.OnActivity(act.RollBack, mock.Anything, mock.MatchedBy(func(in activities.SettleInput) bool {
				return in.Claimed
			})).Return(&tt.rolled, nil)
			var event events.PoolEvent
			env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(func(_ context.Context, in events.PoolEvent) error {
				event = in
				return nil
			})

			in := switchIn
			in.FromRun = ptr.To("run-0")
			res, err := runSwitch(t, env, in)
			require.NoError(t, err)
			require.Equal(t, tt.want, *order)
			require.Equal(t, tt.outcome, res.Outcome)
			require.Equal(t, tt.event, event.Reason)
		})
	}
}

// An operator's re-resolution starts a switch with no input: it decides on
// a live read, recorded by a regular Observe, and ends when nothing moves.
func TestSwitchStartedByAnOperator(t *testing.T) {
	t.Run("up to date", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Observe, mock.Anything, wfapi.PoolRef{Namespace: "ns", Name: "pool"}).Return(&activities.Observation{
			Exists: true, UID: "uid-1", Generation: 3,
			Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
			Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "def"}}}},
			Configs: []resolve.Config{{Name: "def", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}},
		}, nil)
		res, err := runSwitch(t, env, wfapi.SwitchInput{})
		require.NoError(t, err)
		require.Equal(t, []string{"Observe"}, *order)
		require.Equal(t, wfapi.OutcomeUpToDate, res.Outcome)
	})
	t.Run("a move to make", func(t *testing.T) {
		env, order := newSwitchEnv(t)
		env.OnActivity(act.Observe, mock.Anything, mock.Anything).Return(&activities.Observation{
			Exists: true, UID: "uid-1", Generation: 3, ResourceVersion: "7",
			Spec:    []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
			Status:  v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: "old"}}}},
			Configs: []resolve.Config{{Name: "new", Class: v1alpha1.SandboxClassGVisor, ClassDefault: true}, {Name: "old", Class: v1alpha1.SandboxClassGVisor}},
		}, nil)
		env.OnActivity(act.Protect, mock.Anything, mock.Anything).Return(&activities.TargetCheck{OK: true}, nil)
		env.OnActivity(act.Claim, mock.Anything, mock.MatchedBy(func(in activities.ClaimInput) bool {
			return in.ExpectFrom && in.From == "old" && in.Config == "new" && in.Pool.UID == "uid-1"
		})).Return(&activities.PoolWrite{Outcome: activities.Written, ResourceVersion: "8"}, nil)
		env.OnActivity(act.Confirm, mock.Anything, mock.Anything).Return(&activities.PoolWrite{Outcome: activities.Written}, nil)
		env.OnActivity(act.RecordEvent, mock.Anything, mock.Anything).Return(nil)
		res, err := runSwitch(t, env, wfapi.SwitchInput{})
		require.NoError(t, err)
		require.Equal(t, []string{"Observe", local("Protect"), local("Claim"), local("Confirm"), local("RecordEvent")}, *order)
		require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome)
	})
}

// A switch acts on the pool its ID names, whatever its input says.
func TestSwitchActsOnlyOnThePoolItsIDNames(t *testing.T) {
	env, order := newSwitchEnv(t)
	in := switchIn
	in.Pool.Name = "other"
	_, err := runSwitch(t, env, in)
	require.ErrorContains(t, err, "switch workflow of WorkerPool ns/pool was given WorkerPool ns/other")
	require.Empty(t, *order)
}
