//go:build record

package replay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// recordRollout records staged rollouts over four pools, one a canary: one
// that runs its three steps (bake times and a gate of the test's own) to
// the end, created paused and resumed from the spec; one halted by a canary
// that is not Available by the step's deadline, exported while it waits,
// then resumed by the resume annotation, to the end; one driven by its
// request annotations (approval, promote, abort, retry, promote --full);
// one judged by its analysis on the stack's Prometheus, rolled back when
// the canary's errors rise, retried once they fell, promoted to the end;
// one whose first step waits for another cluster's rollout to complete.
func recordRollout(t *testing.T, rec *recording) {
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := &product{(&producttest.Product{
		Env: env, ClusterName: recordedCluster, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Temporal: env.Temporal,
		RolloutStepDeadline: 3 * time.Second, Metrics: activities.PrometheusQuerier(env.Prometheus.Client()),
		RolloutAfterPoll: time.Second,
	}).Run(t)}
	ctx := context.Background()
	kube := env.Kube
	ns := env.Namespace(t)

	gateQueue := "checks-" + p.Scope().TaskQueue
	w := tworker.New(p.TemporalClient(), gateQueue, tworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context, wfapi.GateInput) error { return nil }, workflow.RegisterOptions{Name: "CheckSandboxes"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	for _, name := range []string{"a", "b", "c", "d"} {
		wp := producttest.Pool(ns, name, "")
		if name == "d" {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		p.WaitForConfig(t, ns, name, "gvisor-default", metav1.ConditionTrue)
		producttest.SetAvailable(t, kube, ns, name, true)
	}

	p.CreateAfterOthers(t, producttest.RolloutConfig("gvisor-default-v2", true,
		&v1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: gateQueue},
		producttest.Step(1, false, time.Second), producttest.Step(50, true, time.Second), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "gvisor-default-v2", "paused", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutPaused })
	producttest.SetPaused(t, kube, "gvisor-default-v2", false)
	p.WaitForRollout(t, "gvisor-default-v2", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	completed, completedRun := p.closedRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v2"), "")

	// The canary's workers stop being ready: the next rollout halts at its
	// first step, with the canary moved.
	producttest.SetAvailable(t, kube, ns, "d", false)
	p.CreateAfterOthers(t, producttest.RolloutConfig("gvisor-default-v3", false, nil,
		producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "gvisor-default-v3", "halted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	halted, haltedRun := p.openRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v3"))

	producttest.SetAvailable(t, kube, ns, "d", true)
	producttest.RequestResume(t, kube, "gvisor-default-v3", "1")
	p.WaitForRollout(t, "gvisor-default-v3", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	resumed, resumedRun := p.closedRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v3"), "")
	require.Equal(t, wfapi.SignalRecheck, signals(resumed)[len(signals(resumed))-1], "the halt resumed by the resume request")

	// Driven by its request annotations alone: step 1 waits for approval
	// and is promoted; step 2, baking, is aborted (its pools go back),
	// retried, then promoted fully.
	approval := producttest.Step(1, false, time.Hour)
	approval.Approval = true
	p.CreateAfterOthers(t, producttest.RolloutConfig("gvisor-default-v4", false, nil, approval, producttest.Step(50, true, time.Hour), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "gvisor-default-v4", "awaiting approval", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutAwaitingApproval })
	producttest.Request(t, kube, "gvisor-default-v4", v1alpha1.RolloutPromoteAnnotation, "1")
	p.WaitForRollout(t, "gvisor-default-v4", "baking step 2", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking })
	producttest.Request(t, kube, "gvisor-default-v4", v1alpha1.RolloutAbortAnnotation, "2")
	p.WaitForRollout(t, "gvisor-default-v4", "aborted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutAborted })
	producttest.Eventually(t, "the aborted pools back", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "gvisor-default-v4")
		return len(on) == 0, fmt.Sprint(on)
	})
	producttest.Request(t, kube, "gvisor-default-v4", v1alpha1.RolloutRetryAnnotation, "3")
	p.WaitForRollout(t, "gvisor-default-v4", "baking step 2 again", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking && s.Abort == nil
	})
	producttest.Request(t, kube, "gvisor-default-v4", v1alpha1.RolloutPromoteFullAnnotation, "4")
	p.WaitForRollout(t, "gvisor-default-v4", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	driven, drivenRun := p.closedRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v4"), "")

	// Judged by its analysis (v4): the canary's sandboxes fail while step 1
	// bakes, the rollout rolls back; retried once they recovered, promoted.
	errs := producttest.ServeSandboxErrors(t, env.Prometheus, "replay-"+ns)
	for _, name := range []string{"a", "b", "c", "d"} {
		errs.Set(ns, name, 0.01)
	}
	errs.WaitScraped(t, ns, "d", 0.01)
	judged := producttest.RolloutConfig("gvisor-default-v5", false, nil, producttest.Step(1, false, time.Hour), producttest.Step(100, true, 0))
	judged.Spec.Rollout.OnFailure = v1alpha1.RolloutOnFailureRollBack
	judged.Spec.Rollout.Analysis = &v1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Second},
		Metrics: []v1alpha1.RolloutMetric{errs.Metric("0.1")}}
	p.CreateAfterOthers(t, judged)
	p.WaitForRollout(t, "gvisor-default-v5", "baking step 1", func(s *v1alpha1.RolloutStatus) bool { return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking })
	errs.Set(ns, "d", 0.6)
	p.WaitForRollout(t, "gvisor-default-v5", "rolled back", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutRolledBack })
	producttest.Eventually(t, "the canary back", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "gvisor-default-v5")
		return len(on) == 0, fmt.Sprint(on)
	})
	errs.Set(ns, "d", 0.01)
	errs.WaitScraped(t, ns, "d", 0.01)
	producttest.Request(t, kube, "gvisor-default-v5", v1alpha1.RolloutRetryAnnotation, "1")
	p.WaitForRollout(t, "gvisor-default-v5", "baking step 1 again", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking && s.Abort == nil
	})
	producttest.Request(t, kube, "gvisor-default-v5", v1alpha1.RolloutPromoteAnnotation, "2")
	p.WaitForRollout(t, "gvisor-default-v5", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	rolledBack, rolledBackRun := p.closedRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v5"), "")

	// Waiting for another cluster (v4's afterChange): step 1 holds on
	// AwaitingClusters until the rollout of the same config in cluster
	// "staging" completed. Staging's rollout is a stand-in on a queue of
	// the test's own, of the rollout's type under staging's rollout ID,
	// answering the plan query while it bakes, then done at a signal.
	stagingQueue := "staging-" + p.Scope().TaskQueue
	sw := tworker.New(p.TemporalClient(), stagingQueue, tworker.Options{})
	sw.RegisterWorkflowWithOptions(func(ctx workflow.Context, in wfapi.RolloutInput) (*wfapi.RolloutResult, error) {
		if err := workflow.SetQueryHandler(ctx, wfapi.QueryPlan, func() (wfapi.RolloutPlan, error) {
			return wfapi.RolloutPlan{Config: in.Config, Phase: string(v1alpha1.RolloutBaking), Step: 1, Message: "step 1 done; baking"}, nil
		}); err != nil {
			return nil, err
		}
		workflow.GetSignalChannel(ctx, "finish").Receive(ctx, nil)
		return &wfapi.RolloutResult{Phase: string(v1alpha1.RolloutCompleted), Message: "all 1 steps done"}, nil
	}, workflow.RegisterOptions{Name: wfapi.RolloutWorkflow})
	require.NoError(t, sw.Start())
	t.Cleanup(sw.Stop)
	stagingID := wfapi.Cluster("staging").RolloutWorkflowID("gvisor-default-v6")
	_, err = p.TemporalClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: stagingID, TaskQueue: stagingQueue},
		wfapi.RolloutWorkflow, wfapi.RolloutInput{Config: "gvisor-default-v6"})
	require.NoError(t, err)
	awaiting := producttest.RolloutConfig("gvisor-default-v6", false, nil, producttest.Step(100, false, 0))
	awaiting.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: []string{"staging"}}
	p.CreateAfterOthers(t, awaiting)
	p.WaitForRollout(t, "gvisor-default-v6", "awaiting staging, baking there", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutAwaitingClusters && len(s.AwaitingClusters) == 1 && s.AwaitingClusters[0].Phase == string(v1alpha1.RolloutBaking)
	})
	require.NoError(t, p.TemporalClient().SignalWorkflow(ctx, stagingID, "", "finish", nil))
	p.WaitForRollout(t, "gvisor-default-v6", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	awaited, awaitedRun := p.closedRun(t, recordedCluster.RolloutWorkflowID("gvisor-default-v6"), "")

	rec.save("rollout-completed", completed, completedRun)
	rec.save("rollout-halted", halted, haltedRun)
	rec.save("rollout-resumed", resumed, resumedRun)
	rec.save("rollout-driven", driven, drivenRun)
	rec.save("rollout-rolled-back", rolledBack, rolledBackRun)
	rec.save("rollout-awaited-clusters", awaited, awaitedRun)
}
