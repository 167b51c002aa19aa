package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// The reads of spec.rollout.after against a real Temporal dev server: the
// other clusters' rollout workflows are played by fakeRollout, registered
// under the rollout's type name on a task queue of the test's.

// fakeRolloutInput is what a fake rollout answers its plan query with;
// Next, when set, is the plan of the run it continues as new into when
// told to finish.
type fakeRolloutInput struct {
	Plan wfapi.RolloutPlan  `json:"plan"`
	Next *wfapi.RolloutPlan `json:"next,omitempty"`
}

// signalFinish ends a fake rollout with the result it carries.
const signalFinish = "finish"

func fakeRollout(ctx workflow.Context, in fakeRolloutInput) (*wfapi.RolloutResult, error) {
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryPlan, func() (wfapi.RolloutPlan, error) { return in.Plan, nil }); err != nil {
		return nil, err
	}
	var res wfapi.RolloutResult
	workflow.GetSignalChannel(ctx, signalFinish).Receive(ctx, &res)
	if in.Next != nil {
		return nil, workflow.NewContinueAsNewError(ctx, wfapi.RolloutWorkflow, fakeRolloutInput{Plan: *in.Next})
	}
	return &res, nil
}

func notARollout(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return false })
}

// otherClusters runs the fake rollouts' worker on a task queue of the
// test's, and returns a starter of fake rollouts of config in a cluster.
type otherClusters struct {
	t      *testing.T
	tc     client.Client
	queue  string
	config string
}

func newOtherClusters(t *testing.T) *otherClusters {
	t.Helper()
	env := realTemporal(t)
	o := &otherClusters{t: t, tc: env.Temporal, queue: testenv.TaskQueue(t), config: testenv.UniqueName(t)}
	w := worker.New(o.tc, o.queue, worker.Options{})
	w.RegisterWorkflowWithOptions(fakeRollout, workflow.RegisterOptions{Name: wfapi.RolloutWorkflow})
	w.RegisterWorkflowWithOptions(notARollout, workflow.RegisterOptions{Name: "NotARollout"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return o
}

// cluster is a cluster name unique to the test.
func (o *otherClusters) cluster(suffix string) wfapi.Cluster {
	name := testenv.UniqueName(o.t)
	return wfapi.Cluster(name[:min(len(name), 50)] + "-" + suffix)
}

// start runs a fake rollout of the config in cluster, on queue (default the
// test's), and waits until it answers its query when a worker polls it.
func (o *otherClusters) start(cluster wfapi.Cluster, in fakeRolloutInput, queue string) client.WorkflowRun {
	o.t.Helper()
	ctx := context.Background()
	id := cluster.RolloutWorkflowID(o.config)
	if queue == "" {
		queue = o.queue
	}
	run, err := o.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, wfapi.RolloutWorkflow, in)
	require.NoError(o.t, err)
	o.t.Cleanup(func() { _ = o.tc.TerminateWorkflow(context.Background(), id, "", "test finished") })
	if queue == o.queue {
		require.Eventually(o.t, func() bool {
			_, err := o.tc.QueryWorkflow(ctx, id, run.GetRunID(), wfapi.QueryPlan)
			return err == nil
		}, 10*time.Second, 20*time.Millisecond, "the fake rollout %s answers its query", id)
	}
	return run
}

// finish ends the fake rollout's run with res and waits until it closed.
func (o *otherClusters) finish(run client.WorkflowRun, res wfapi.RolloutResult) {
	o.t.Helper()
	ctx := context.Background()
	require.NoError(o.t, o.tc.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), signalFinish, res))
	// Until this run closed (completed, or continued as new), not the runs
	// after it.
	_ = run.GetWithOptions(ctx, nil, client.WorkflowRunGetOptions{DisableFollowingRuns: true})
}

func TestReadClusterRollout(t *testing.T) {
	o := newOtherClusters(t)
	ctx := context.Background()
	read := func(c wfapi.Cluster) rollout.ClusterRollout {
		t.Helper()
		r, err := ReadClusterRollout(ctx, o.tc, c, o.config)
		require.NoError(t, err)
		return r
	}
	halted := wfapi.RolloutPlan{Phase: string(v1alpha1.RolloutHalted), Step: 1, Message: "step 1: gate workflow CheckSandboxes failed"}

	t.Run("no rollout of the config there", func(t *testing.T) {
		c := o.cluster("none")
		require.Equal(t, rollout.ClusterRollout{Cluster: string(c)}, read(c))
	})
	t.Run("running: its plan query says where it stands", func(t *testing.T) {
		c := o.cluster("halted")
		o.start(c, fakeRolloutInput{Plan: halted}, "")
		require.Equal(t, rollout.ClusterRollout{Cluster: string(c), Workflow: rollout.WorkflowRunning, Phase: v1alpha1.RolloutHalted, Step: 1,
			Message: "step 1: gate workflow CheckSandboxes failed"}, read(c))
	})
	t.Run("running, between holds (no phase in its plan): Progressing", func(t *testing.T) {
		c := o.cluster("taking")
		o.start(c, fakeRolloutInput{Plan: wfapi.RolloutPlan{Step: 2}}, "")
		require.Equal(t, rollout.ClusterRollout{Cluster: string(c), Workflow: rollout.WorkflowRunning, Phase: v1alpha1.RolloutProgressing, Step: 2}, read(c))
	})
	t.Run("completed: its result's phase and when it closed", func(t *testing.T) {
		c := o.cluster("completed")
		before := time.Now().Add(-time.Second)
		run := o.start(c, fakeRolloutInput{}, "")
		o.finish(run, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted), Message: "all 3 steps done"})
		r := read(c)
		require.True(t, r.Completed(), "%+v", r)
		require.Equal(t, "all 3 steps done", r.Message)
		require.WithinRange(t, r.ClosedAt, before, time.Now())
	})
	t.Run("ended Stopped: no completion", func(t *testing.T) {
		c := o.cluster("stopped")
		run := o.start(c, fakeRolloutInput{}, "")
		o.finish(run, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutStopped), Message: "spec.rollout was removed"})
		r := read(c)
		require.False(t, r.Completed())
		require.Equal(t, rollout.WorkflowCompleted, r.Workflow)
		require.Equal(t, v1alpha1.RolloutStopped, r.Phase)
	})
	t.Run("terminated: how it closed, no completion", func(t *testing.T) {
		c := o.cluster("terminated")
		run := o.start(c, fakeRolloutInput{}, "")
		require.NoError(t, o.tc.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "by hand"))
		r := read(c)
		require.Equal(t, "Terminated", r.Workflow)
		require.False(t, r.Completed())
		require.False(t, r.ClosedAt.IsZero())
	})
	t.Run("the latest run decides: completed, then run again", func(t *testing.T) {
		c := o.cluster("again")
		first := o.start(c, fakeRolloutInput{}, "")
		o.finish(first, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted)})
		require.True(t, read(c).Completed())
		o.start(c, fakeRolloutInput{Plan: halted}, "")
		r := read(c)
		require.Equal(t, rollout.WorkflowRunning, r.Workflow, "the new run, not the completed one: %+v", r)
		require.Equal(t, v1alpha1.RolloutHalted, r.Phase)
	})
	t.Run("the latest run decides: continued as new", func(t *testing.T) {
		c := o.cluster("continued")
		run := o.start(c, fakeRolloutInput{Plan: halted, Next: &wfapi.RolloutPlan{Phase: string(v1alpha1.RolloutBaking), Step: 3}}, "")
		o.finish(run, wfapi.RolloutResult{})
		require.EventuallyWithT(t, func(c2 *assert.CollectT) {
			r, err := ReadClusterRollout(ctx, o.tc, c, o.config)
			require.NoError(c2, err)
			require.Equal(c2, rollout.ClusterRollout{Cluster: string(c), Workflow: rollout.WorkflowRunning, Phase: v1alpha1.RolloutBaking, Step: 3}, r)
		}, 10*time.Second, 20*time.Millisecond)
	})
	t.Run("running, its worker not answering: waits, saying so", func(t *testing.T) {
		c := o.cluster("noworker")
		o.start(c, fakeRolloutInput{}, testenv.TaskQueue(t)) // nobody polls it
		r := read(c)
		require.Equal(t, rollout.WorkflowRunning, r.Workflow)
		require.Empty(t, r.Phase)
		require.Contains(t, r.Message, `did not answer the "plan" query within 3s`)
	})
	t.Run("a workflow of another type under the ID: no rollout", func(t *testing.T) {
		c := o.cluster("foreign")
		id := c.RolloutWorkflowID(o.config)
		_, err := o.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: o.queue}, "NotARollout")
		require.NoError(t, err)
		t.Cleanup(func() { _ = o.tc.TerminateWorkflow(context.Background(), id, "", "test finished") })
		r := read(c)
		require.Equal(t, rollout.WorkflowForeign, r.Workflow)
		require.Contains(t, r.Message, "is a NotARollout, not a SandboxConfigRollout")
	})
}

// TestAwaitClusters: the long wait of a rollout held on AwaitingClusters
// returns when a read differs from its look's, or when the bake ends, and
// not before.
func TestAwaitClusters(t *testing.T) {
	o := newOtherClusters(t)
	ctx := context.Background()
	a := &Activities{Temporal: o.tc, RolloutAfterPoll: 50 * time.Millisecond}

	t.Run("returns once the other cluster's rollout completes", func(t *testing.T) {
		c := o.cluster("wave")
		run := o.start(c, fakeRolloutInput{Plan: wfapi.RolloutPlan{Phase: string(v1alpha1.RolloutBaking), Step: 2}}, "")
		seen, err := ReadClusterRollout(ctx, o.tc, c, o.config)
		require.NoError(t, err)
		done := make(chan string, 1)
		go func() {
			why, err := a.AwaitClusters(ctx, AwaitClustersInput{Config: o.config, Seen: []rollout.ClusterRollout{seen}})
			require.NoError(t, err)
			done <- why
		}()
		select {
		case why := <-done:
			t.Fatalf("returned %s while nothing changed", why)
		case <-time.After(500 * time.Millisecond): // ten reads
		}
		o.finish(run, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted)})
		select {
		case why := <-done:
			require.Equal(t, AwaitChanged, why)
		case <-time.After(10 * time.Second):
			t.Fatal("did not return within 10s of the other rollout's completion")
		}
	})
	t.Run("returns at the end of the bake", func(t *testing.T) {
		c := o.cluster("baked")
		run := o.start(c, fakeRolloutInput{}, "")
		o.finish(run, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted)})
		seen, err := ReadClusterRollout(ctx, o.tc, c, o.config)
		require.NoError(t, err)
		readyAt := time.Now().Add(700 * time.Millisecond)
		why, err := a.AwaitClusters(ctx, AwaitClustersInput{Config: o.config, Seen: []rollout.ClusterRollout{seen}, ReadyAt: &readyAt})
		require.NoError(t, err)
		require.Equal(t, AwaitBaked, why)
		require.False(t, time.Now().Before(readyAt), "returned before the bake ended")
	})
}

// TestLookAtRolloutReadsAfterClusters: a look of a rollout with
// spec.rollout.after reads the other clusters through Temporal while its
// first step waits, and holds it naming them; past its first step, or
// without after, it reads nothing of Temporal (the activities below have
// no client: a read would fail).
func TestLookAtRolloutReadsAfterClusters(t *testing.T) {
	o := newOtherClusters(t)
	ctx := context.Background()
	staging := o.cluster("staging")
	setAfter := func(store ctrlclient.Client, clusters ...string) {
		t.Helper()
		var c v1alpha1.SandboxConfig
		require.NoError(t, store.Get(ctx, ctrlclient.ObjectKey{Name: "new"}, &c))
		c.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: clusters}
		require.NoError(t, store.Update(ctx, &c))
	}

	a, store := rolloutFixture(t, nil, nil)
	setAfter(store, string(staging))
	a.Temporal, a.Scope = o.tc, wfapi.ScopeOf("prod", "")
	// The config's name in the fixture is "new": the other cluster's rollout
	// of "new".
	o.config = "new"
	look, err := a.LookAtRollout(ctx, LookInput{Config: "new", Done: -1})
	require.NoError(t, err)
	require.Equal(t, rollout.Hold, look.Verdict.Action)
	require.Equal(t, v1alpha1.RolloutAwaitingClusters, look.Verdict.Phase)
	require.Equal(t, []v1alpha1.RolloutAwaitedCluster{{Cluster: string(staging),
		Message: `no rollout of SandboxConfig "new" in cluster "` + string(staging) + `" yet`}}, look.Verdict.Awaiting)
	require.Equal(t, []rollout.ClusterRollout{{Cluster: string(staging)}}, look.After)

	// The hold is written with the clusters; the next phase clears them.
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: "new", UID: "uid-new", Phase: look.Verdict.Phase,
		Message: look.Verdict.Message, AwaitingClusters: look.Verdict.Awaiting}))
	require.Equal(t, look.Verdict.Awaiting, rolloutStatusOf(t, store).AwaitingClusters)

	run := o.start(staging, fakeRolloutInput{}, "")
	o.finish(run, wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted)})
	look, err = a.LookAtRollout(ctx, LookInput{Config: "new", UID: "uid-new", Done: 0})
	require.NoError(t, err)
	require.Equal(t, rollout.Verdict{Action: rollout.Take, Step: 1, UID: "uid-new"}, look.Verdict, "completed there: step 1")
	adm, err := a.AdmitRolloutStep(ctx, AdmitInput{Config: "new", Step: 1, WorkflowID: "w", UID: "uid-new"})
	require.NoError(t, err)
	require.False(t, adm.Gone)
	st := rolloutStatusOf(t, store)
	require.Empty(t, st.AwaitingClusters, "the admission clears the clusters waited for")
	require.Equal(t, v1alpha1.RolloutProgressing, st.Phase)

	// Past step 1: no read, whatever the other cluster does.
	a.Temporal = nil
	look, err = a.LookAtRollout(ctx, LookInput{Config: "new", UID: "uid-new", Done: 1})
	require.NoError(t, err)
	require.Equal(t, rollout.Take, look.Verdict.Action)
	require.Equal(t, int32(2), look.Verdict.Step)
	require.Empty(t, look.After)

	// A cluster listing itself is refused without a read.
	b, store2 := rolloutFixture(t, nil, nil)
	setAfter(store2, "prod")
	b.Scope = wfapi.ScopeOf("prod", "")
	look, err = b.LookAtRollout(ctx, LookInput{Config: "new", Done: -1})
	require.NoError(t, err)
	require.Equal(t, v1alpha1.RolloutAwaitingClusters, look.Verdict.Phase)
	require.Contains(t, look.Verdict.Message, `refused: spec.rollout.after.clusters lists this cluster, "prod", itself`)
}
