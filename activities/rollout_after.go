package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// spec.rollout.after (docs/decisions/0027-waves-across-clusters.md): a
// rollout's first step waits for the rollouts of the config of the same
// name in other clusters. Those clusters' API servers are not reachable
// from here, and need not be: every cluster's rollouts run in the one
// Temporal namespace, so their workflows are read there, by ID
// (wfapi.Cluster.RolloutWorkflowID), through the worker's Temporal client.
//
// What is read is read only: a describe of the workflow ID's latest run,
// the result of a closed one, the plan query of a running one (a query
// runs the other cluster's query handler on the other cluster's worker and
// changes nothing). Nothing is started, signalled or written there, and
// nothing of the other cluster is written here but what it said, in this
// config's status. ClusterGuard still holds: the calling workflow is this
// cluster's rollout of the config (checkCaller), and what it reads of
// another cluster is named by the config's name, not by its input.

// DefaultRolloutAfterPoll is how often a rollout held on AwaitingClusters
// reads the other clusters' rollouts again (AwaitClusters), when the
// worker's setting is unset.
const DefaultRolloutAfterPoll = 30 * time.Second

// AwaitClustersBound is the longest one AwaitClusters waits with no change
// before it returns, and the rollout looks again: a look a few times an
// hour costs the history a dozen events, and catches what nothing signals
// (a worker setting changed, a read that errs the same way each time).
const AwaitClustersBound = time.Hour

// afterQueryTimeout bounds the plan query of another cluster's running
// rollout. Its worker answers in milliseconds when it runs; when it does
// not, the query would wait for one: the rollout says so and reads again.
const afterQueryTimeout = 3 * time.Second

// awaitHeartbeat is how often AwaitClusters heartbeats between its reads,
// within the heartbeat timeout the workflow gives it.
const awaitHeartbeat = 2 * time.Second

// ErrNoTemporal: the activities were built without a Temporal client, which
// a rollout with spec.rollout.after reads the other clusters through.
const ErrNoTemporal = "NoTemporal"

// readAfter reads the rollouts of c's spec.rollout.after clusters (but this
// one: the planner refuses a rollout that waits for its own), at once, and
// when it read them.
func (a *Activities) readAfter(ctx context.Context, c *v1alpha1.SandboxConfig) ([]rollout.ClusterRollout, time.Time, error) {
	var clusters []string
	for _, name := range c.Spec.Rollout.After.Clusters {
		if name != string(a.Scope.Cluster) {
			clusters = append(clusters, name)
		}
	}
	read, err := a.readClusterRollouts(ctx, c.Name, clusters)
	return read, time.Now().UTC().Truncate(time.Second), err
}

// readClusterRollouts reads the rollouts of config in each of clusters
// through Temporal, in parallel (at most 16: the CRD's bound).
func (a *Activities) readClusterRollouts(ctx context.Context, config string, clusters []string) ([]rollout.ClusterRollout, error) {
	if len(clusters) == 0 {
		return nil, nil
	}
	if a.Temporal == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the rollout of SandboxConfig %q waits for other clusters (spec.rollout.after), which it reads through Temporal, and these activities were built without a Temporal client", config),
			ErrNoTemporal, nil)
	}
	out := make([]rollout.ClusterRollout, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, name := range clusters {
		wg.Go(func() { out[i], errs[i] = ReadClusterRollout(ctx, a.Temporal, wfapi.Cluster(name), config) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// ReadClusterRollout reads the rollout of config in cluster: the latest run
// of its workflow ID, whatever ran under the ID before (a rollout that
// continued as new, a config deleted and created again there, a rollout
// run again after it ended). Running, its plan query says where it stands;
// closed with a result, the result's phase (Completed, or Stopped and
// Superseded, which are no completion) and its close time; closed another
// way, how. A workflow of another type under the ID (one started by hand)
// is no rollout.
func ReadClusterRollout(ctx context.Context, tc client.Client, cluster wfapi.Cluster, config string) (rollout.ClusterRollout, error) {
	r := rollout.ClusterRollout{Cluster: string(cluster)}
	id := cluster.RolloutWorkflowID(config)
	desc, err := tc.DescribeWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return r, nil
	case err != nil:
		return r, fmt.Errorf("describing workflow %s, the rollout of SandboxConfig %q in cluster %q: %w", id, config, cluster, err)
	}
	info := desc.RawResponse.GetWorkflowExecutionInfo()
	run := info.GetExecution().GetRunId()
	if t := info.GetType().GetName(); t != wfapi.RolloutWorkflow {
		r.Workflow, r.Message = rollout.WorkflowForeign, fmt.Sprintf("workflow %s is a %s, not a %s", id, t, wfapi.RolloutWorkflow)
		return r, nil
	}
	if info.GetCloseTime() != nil {
		r.ClosedAt = info.GetCloseTime().AsTime().UTC()
	}
	switch status := info.GetStatus(); status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		r.Workflow = rollout.WorkflowRunning
		qctx, cancel := context.WithTimeout(ctx, afterQueryTimeout)
		defer cancel()
		var plan wfapi.RolloutPlan
		v, err := tc.QueryWorkflow(qctx, id, run, wfapi.QueryPlan)
		if err == nil {
			err = v.Get(&plan)
		}
		if err != nil {
			// No error of the read: the rollout runs, and says so.
			r.Message = fmt.Sprintf("its %q query failed: %v", wfapi.QueryPlan, err)
			if qctx.Err() != nil || timedOut(err) {
				r.Message = fmt.Sprintf("its worker did not answer the %q query within %s: is that cluster's worker running?", wfapi.QueryPlan, afterQueryTimeout)
			}
			return r, nil
		}
		r.Phase, r.Step, r.Message = v1alpha1.RolloutPhase(plan.Phase), plan.Step, plan.Message
		if r.Phase == "" {
			// A run between its looks' holds takes a step: the phase its
			// status has.
			r.Phase = v1alpha1.RolloutProgressing
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var res wfapi.RolloutResult
		if err := tc.GetWorkflow(ctx, id, run).Get(ctx, &res); err != nil {
			return r, fmt.Errorf("reading the result of workflow %s (run %s), the rollout of SandboxConfig %q in cluster %q: %w", id, run, config, cluster, err)
		}
		r.Workflow, r.Phase, r.Message = rollout.WorkflowCompleted, v1alpha1.RolloutPhase(res.Phase), res.Message
	default:
		// Terminated, Failed, Canceled, TimedOut: no result, no completion.
		r.Workflow = workflowStatusName(status)
	}
	return r, nil
}

// timedOut reports whether a query's error is its deadline's: the gRPC
// call is ended a moment before the context, and says Canceled.
func timedOut(err error) bool {
	var canceled *serviceerror.Canceled
	var deadline *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &canceled) || errors.As(err, &deadline)
}

// workflowStatusName is a closed run's status as the Web UI says it.
func workflowStatusName(s enumspb.WorkflowExecutionStatus) string {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "Terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "Failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "Canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "TimedOut"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "ContinuedAsNew"
	}
	return s.String()
}

// AwaitClustersInput asks AwaitClusters to wait while the rollouts of the
// clusters of Seen read as Seen says, and ReadyAt (the end of
// spec.rollout.after.bake, when only it is left) has not passed.
type AwaitClustersInput struct {
	Config  string                   `json:"config"`
	Seen    []rollout.ClusterRollout `json:"seen"`
	ReadyAt *time.Time               `json:"readyAt,omitempty"`
}

// Why AwaitClusters returned.
const (
	AwaitChanged = "Changed"
	AwaitBaked   = "Baked"
	AwaitBound   = "Bound"
)

// AwaitClusters is how a rollout held on AwaitingClusters learns that it
// may go on, since nobody tells it: the other clusters' workflows do not
// know it waits. It reads their rollouts again every poll (the worker's
// RolloutAfterPoll), heartbeating between reads, and returns once a read
// differs from what the rollout's look saw (a phase, a step, a message, a
// completion), or at ReadyAt, or at AwaitClustersBound: the rollout then
// looks again. One long activity rather than a timer per poll keeps a
// wait of hours to a few history events per change over there.
func (a *Activities) AwaitClusters(ctx context.Context, in AwaitClustersInput) (string, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return "", err
	}
	clusters := make([]string, len(in.Seen))
	for i, r := range in.Seen {
		clusters[i] = r.Cluster
	}
	poll := a.RolloutAfterPoll
	if poll <= 0 {
		poll = DefaultRolloutAfterPoll
	}
	bound := time.Now().Add(AwaitClustersBound)
	heartbeat := time.NewTicker(min(awaitHeartbeat, poll))
	defer heartbeat.Stop()
	nextRead := time.Now().Add(poll)
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case now := <-heartbeat.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
			switch {
			case in.ReadyAt != nil && !now.Before(*in.ReadyAt):
				return AwaitBaked, nil
			case !now.Before(bound):
				return AwaitBound, nil
			case now.Before(nextRead):
				continue
			}
			nextRead = now.Add(poll)
			read, err := a.readClusterRollouts(ctx, in.Config, clusters)
			if err != nil {
				return "", err
			}
			if !slices.EqualFunc(read, in.Seen, sameRead) {
				return AwaitChanged, nil
			}
		}
	}
}

// sameRead reports whether two reads of a cluster's rollout say the same.
// Why a running one's plan is unknown (its query's error) is not news: a
// worker that stays down must not wake the rollout at every read.
func sameRead(a, b rollout.ClusterRollout) bool {
	unknown := a.Workflow == rollout.WorkflowRunning && a.Phase == "" && b.Phase == ""
	return a.Cluster == b.Cluster && a.Workflow == b.Workflow && a.Phase == b.Phase && a.Step == b.Step &&
		(a.Message == b.Message || unknown) && a.ClosedAt.Equal(b.ClosedAt)
}
