package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"ate.dev/orchestrator/internal/searchattr"
)

// execRef is one execution (a run of a workflow ID).
type execRef struct {
	ID, RunID string
}

func visibilityTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// startedQuery selects executions started in [from, to); a zero to leaves
// the window open.
func startedQuery(from, to time.Time) string {
	q := fmt.Sprintf("StartTime >= %q", visibilityTime(from))
	if !to.IsZero() {
		q += fmt.Sprintf(" AND StartTime < %q", visibilityTime(to))
	}
	return q
}

// listExecutions pages through the executions a visibility query selects.
func listExecutions(ctx context.Context, tc tclient.Client, query string) ([]execRef, error) {
	var out []execRef
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("listing executions (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			out = append(out, execRef{ID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// countExecutions counts the executions a visibility query selects.
func countExecutions(ctx context.Context, tc tclient.Client, query string) (int64, error) {
	resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return 0, fmt.Errorf("counting executions (%s): %w", query, err)
	}
	return resp.GetCount(), nil
}

// poolExecutions lists the executions of a pool (its WorkerPool search
// attribute value) started in [from, to).
func poolExecutions(ctx context.Context, tc tclient.Client, pool string, from, to time.Time) ([]execRef, error) {
	return listExecutions(ctx, tc, fmt.Sprintf("%s = %q AND %s", searchattr.WorkerPool, pool, startedQuery(from, to)))
}

// awaitPoolExecutions waits until the pool has at least one execution
// started in the window (visibility follows the start by a task of the
// server's visibility queue) and returns them.
func awaitPoolExecutions(ctx context.Context, tc tclient.Client, pool string, from, to time.Time) (execs []execRef, err error) {
	what := fmt.Sprintf("an execution of %s started between %s and %s to be visible", pool, visibilityTime(from), visibilityTime(to))
	waitErr := untilEvery(ctx, 100*time.Millisecond, 30*time.Second, what, func() (bool, string) {
		execs, err = poolExecutions(ctx, tc, pool, from, to)
		return err != nil || len(execs) > 0, "none"
	})
	return execs, cmp.Or(err, waitErr)
}

// settledTransitions describes an execution until it is at rest (closed,
// or running with no workflow task, activity or child pending) and
// returns its state transition count, 0 when the execution does not
// exist. runID "" is the current run.
func settledTransitions(ctx context.Context, tc tclient.Client, id, runID string) (n int64, err error) {
	waitErr := untilEvery(ctx, 50*time.Millisecond, time.Minute, id+" to have no work pending", func() (bool, string) {
		d, dErr := tc.DescribeWorkflowExecution(ctx, id, runID)
		var notFound *serviceerror.NotFound
		if errors.As(dErr, &notFound) {
			n = 0
			return true, ""
		}
		if dErr != nil {
			err = fmt.Errorf("describing %s: %w", id, dErr)
			return true, ""
		}
		info := d.GetWorkflowExecutionInfo()
		n = info.GetStateTransitionCount()
		return info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
			(d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 0 && len(d.GetPendingChildren()) == 0), "work pending"
	})
	return n, cmp.Or(err, waitErr)
}

// executionsTransitions sums the state transitions of executions, each at
// rest; with more than limit of them, of limit spread over them, scaled
// to all.
func executionsTransitions(ctx context.Context, tc tclient.Client, execs []execRef, limit int) (float64, error) {
	sample := spread(execs, limit)
	if len(sample) == 0 {
		return 0, nil
	}
	var sum int64
	for _, e := range sample {
		n, err := settledTransitions(ctx, tc, e.ID, e.RunID)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return float64(sum) * float64(len(execs)) / float64(len(sample)), nil
}

// spread picks at most k of xs, evenly spread.
func spread[T any](xs []T, k int) []T {
	if len(xs) <= k {
		return xs
	}
	out := make([]T, 0, k)
	for j := range k {
		out = append(out, xs[j*len(xs)/k])
	}
	return out
}
