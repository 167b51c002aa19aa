package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/rollout"
)

// rolloutFixture is a fake API server with a rolling-out config "new"
// (steps [1 pool, 100%], the gate given) over four unpinned pools on "old",
// "c" labelled canary. The activities' cache is the same store, with the
// worker's indexes: always up to date.
func rolloutFixture(t *testing.T, gate *v1alpha1.RolloutGate, st *v1alpha1.RolloutStatus) (*Activities, ctrlclient.Client) {
	t.Helper()
	cfg := func(name string, created int64) *v1alpha1.SandboxConfig {
		c := sandboxConfig(name, gvisor, true, false)
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
		c.CreationTimestamp = metav1.Unix(created, 0)
		return c
	}
	newCfg := cfg("new", 200)
	newCfg.UID = "uid-new"
	newCfg.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Gate: gate,
		Steps: []v1alpha1.RolloutStep{{Pools: ptr.To[int32](1)}, {Percent: ptr.To[int32](100)}}}
	newCfg.Status.Rollout = st
	objs := []ctrlclient.Object{cfg("old", 100), newCfg}
	for _, name := range []string{"a", "b", "c", "d"} {
		wp := poolOn(name, "old")
		wp.Spec.SandboxClasses = []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}
		if name == "c" {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		objs = append(objs, wp)
	}
	store := indexedStore(t, fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.SandboxConfig{}, &v1alpha1.WorkerPool{}))
	return &Activities{Live: store, Cache: store}, store
}

// indexedStore builds b with the indexes of poolwatch.Index, as the
// worker's cache has them.
func indexedStore(t *testing.T, b *fake.ClientBuilder) ctrlclient.WithWatch {
	t.Helper()
	require.NoError(t, poolwatch.Index(context.Background(), builderIndexer{b}))
	return b.Build()
}

// builderIndexer registers an index on a fake client's builder.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj ctrlclient.Object, field string, fn ctrlclient.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

func rolloutStatusOf(t *testing.T, c ctrlclient.Client) *v1alpha1.RolloutStatus {
	t.Helper()
	var got v1alpha1.SandboxConfig
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Name: "new"}, &got))
	require.NotNil(t, got.Status.Rollout)
	return got.Status.Rollout
}

func movePool(t *testing.T, c ctrlclient.Client, name, to string) {
	t.Helper()
	var wp v1alpha1.WorkerPool
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: name}, &wp))
	wp.Status.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: to}
	require.NoError(t, c.Status().Update(context.Background(), &wp))
}

// TestARetakenStepGivesItsGateItsPools (issue 45, item 2): step 1 admits
// the canary; once it moved, the step taken again (after a halt and a
// resume, or by a new run) still names it, where v0.1.0 gave the gate
// `pools: []`.
func TestARetakenStepGivesItsGateItsPools(t *testing.T) {
	a, store := rolloutFixture(t, nil, nil)
	ctx := context.Background()
	in := AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"}
	first, err := a.AdmitRolloutStep(ctx, in)
	require.NoError(t, err)
	require.Equal(t, []string{"ns/c"}, first.Pools)
	st := rolloutStatusOf(t, store)
	require.Equal(t, []string{"ns/c"}, st.AdmittedCanaries)
	require.Equal(t, &v1alpha1.RolloutAdmissionMark{}, st.StepStart, "nothing was admitted before step 1")

	movePool(t, store, "c", "new")
	again, err := a.AdmitRolloutStep(ctx, in)
	require.NoError(t, err)
	require.Equal(t, []string{"ns/c"}, again.Pools, "the retaken step's pools are the step's, not the empty delta")
	require.Equal(t, int32(1), rolloutStatusOf(t, store).MovedPools)

	next, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 2, WorkflowID: "w", UID: "uid-new"})
	require.NoError(t, err)
	require.Equal(t, []string{"ns/a", "ns/b", "ns/d"}, next.Pools)
	require.Equal(t, &v1alpha1.RolloutAdmissionMark{Canaries: 1}, rolloutStatusOf(t, store).StepStart)
}

// TestRolloutCountsAreTrue (issue 45, item 3): every status write counts
// the class's pools, 0 included: a stale movedPools is overwritten, a
// stopped rollout shows 0 admitted, a completed one all.
func TestRolloutCountsAreTrue(t *testing.T) {
	stale := &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1, AdmittedPools: 3, MovedPools: 172, TotalPools: 201,
		AdmittedCanaries: []string{"ns/c"}}
	for _, tc := range []struct {
		name                   string
		in                     RolloutStatusInput
		admitted, moved, total int32
	}{
		{"a hold", RolloutStatusInput{Phase: v1alpha1.RolloutPaused, Message: "paused"}, 1, 0, 4},
		{"stopped: the admission dropped", RolloutStatusInput{Phase: v1alpha1.RolloutStopped, Clear: true}, 0, 0, 4},
		{"completed: every pool admitted", RolloutStatusInput{Phase: v1alpha1.RolloutCompleted, Message: "done"}, 4, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, store := rolloutFixture(t, nil, stale.DeepCopy())
			tc.in.Config, tc.in.UID = "new", "uid-new"
			require.NoError(t, a.SetRolloutStatus(context.Background(), tc.in))
			st := rolloutStatusOf(t, store)
			require.Equal(t, []int32{tc.admitted, tc.moved, tc.total}, []int32{st.AdmittedPools, st.MovedPools, st.TotalPools})
			require.Equal(t, tc.in.Phase, st.Phase)
		})
	}
}

// TestRolloutWritesOutliveTheRun: a halt, a pause signal and a resume
// request answered are recorded in status, where any later run reads them.
func TestRolloutWritesOutliveTheRun(t *testing.T) {
	a, store := rolloutFixture(t, nil, &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1})
	ctx := context.Background()
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", Phase: v1alpha1.RolloutHalted, Message: "gate failed",
		Halt: &v1alpha1.RolloutHalt{Step: 1, Message: "gate failed"}}))
	require.Equal(t, &v1alpha1.RolloutHalt{Step: 1, Message: "gate failed"}, rolloutStatusOf(t, store).Halt)
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", PausedSeen: true}))
	require.True(t, rolloutStatusOf(t, store).Halt.PausedSeen)
	require.Equal(t, v1alpha1.RolloutHalted, rolloutStatusOf(t, store).Phase, "a write of requests alone keeps the phase")

	paused := true
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", SignalPaused: &paused}))
	require.True(t, rolloutStatusOf(t, store).SignalPaused)
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", ClearHalt: true, Resume: "r1", SignalPaused: new(bool)}))
	st := rolloutStatusOf(t, store)
	require.Nil(t, st.Halt)
	require.False(t, st.SignalPaused)
	require.Equal(t, "r1", st.ResumeRequest)
}

// TestRolloutActivitiesActOnTheirIncarnation (issue 45, item 5): a run
// bound to another incarnation of the config admits and writes nothing.
func TestRolloutActivitiesActOnTheirIncarnation(t *testing.T) {
	a, store := rolloutFixture(t, nil, &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, Message: "as it was"})
	ctx := context.Background()
	adm, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-before"})
	require.NoError(t, err)
	require.True(t, adm.Gone)
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-before", Phase: v1alpha1.RolloutHalted, Message: "x"}))
	require.Equal(t, "as it was", rolloutStatusOf(t, store).Message)
	wait, err := a.lookAtStep(ctx, WaitInput{Config: "new", UID: "uid-before", Step: 1}, &stepWatch{cache: a.Cache})
	require.NoError(t, err)
	require.Equal(t, StepLookAgain, wait.Outcome)

	look, err := a.LookAtRollout(ctx, LookInput{Config: "new", UID: "uid-before", Done: 1})
	require.NoError(t, err)
	require.Equal(t, rollout.StartOver, look.Verdict.Action)
	require.Equal(t, types.UID("uid-new"), look.Verdict.UID)
}

// TestAGateMayNotRunTheOrchestratorsWorkflows (issue 45, item 11): a gate
// naming a workflow type of the orchestrator's is refused with a message
// naming the field (the CRD refuses it first; this is the run time check).
func TestAGateMayNotRunTheOrchestratorsWorkflows(t *testing.T) {
	for _, tc := range []struct {
		gate    v1alpha1.RolloutGate
		refused string
	}{
		{v1alpha1.RolloutGate{WorkflowType: "Operator", TaskQueue: "checks"}, `spec.rollout.gate.workflowType "Operator"`},
		{v1alpha1.RolloutGate{WorkflowType: "SandboxConfigSwitch", TaskQueue: "checks"}, `spec.rollout.gate.workflowType "SandboxConfigSwitch"`},
		{v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks"}, ""},
	} {
		t.Run(tc.gate.WorkflowType, func(t *testing.T) {
			a, _ := rolloutFixture(t, &tc.gate, nil)
			adm, err := a.AdmitRolloutStep(context.Background(), AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
			require.NoError(t, err)
			if tc.refused == "" {
				require.Empty(t, adm.Refused)
				require.Equal(t, DefaultGateTimeout, adm.GateTimeout)
				return
			}
			require.Contains(t, adm.Refused, tc.refused)
		})
	}
}

// TestLookAtRolloutAsksThePlanner: the look's verdict is the planner's on
// what it read: a first look binds the run to the config's UID and takes
// step 1.
func TestLookAtRolloutAsksThePlanner(t *testing.T) {
	a, _ := rolloutFixture(t, nil, nil)
	look, err := a.LookAtRollout(context.Background(), LookInput{Config: "new", Done: -1})
	require.NoError(t, err)
	require.Equal(t, rollout.Verdict{Action: rollout.Take, Step: 1, UID: "uid-new"}, look.Verdict)
	require.Equal(t, 4, look.Plan.Total)
	require.Equal(t, []string{"ns/c"}, look.Plan.Steps[0].Pools)
}
