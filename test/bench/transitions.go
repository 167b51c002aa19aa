package main

import (
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

// poolSample names a sampled pool's executions in Temporal.
type poolSample struct {
	// Key is the pool's WorkerPool search attribute value: every execution
	// a switch of the pool starts carries it.
	Key string
	// LongRunning is the ID of a workflow that lives across switches (the
	// pool+child shapes' pool workflow), whose share of a switch is what it
	// gained during it. In the product's shape no such workflow exists.
	LongRunning string
}

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
// attribute) started in [from, to), except its long-running workflow.
func poolExecutions(ctx context.Context, tc tclient.Client, s poolSample, from, to time.Time) ([]execRef, error) {
	all, err := listExecutions(ctx, tc, fmt.Sprintf("%s = %q AND %s", searchattr.WorkerPool, s.Key, startedQuery(from, to)))
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if e.ID != s.LongRunning {
			out = append(out, e)
		}
	}
	return out, nil
}

// awaitPoolExecutions waits until the pool has at least one execution
// started in the window (visibility follows the start by a task of the
// server's visibility queue) and returns them.
func awaitPoolExecutions(ctx context.Context, tc tclient.Client, s poolSample, from, to time.Time) ([]execRef, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		execs, err := poolExecutions(ctx, tc, s, from, to)
		if err != nil || len(execs) > 0 {
			return execs, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no execution of %s started between %s and %s is visible after 30 s", s.Key, visibilityTime(from), visibilityTime(to))
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settledTransitions describes an execution until it is at rest (closed,
// or running with no workflow task, activity or child pending) and
// returns its state transition count; found is false when the execution
// does not exist. runID "" is the current run.
func settledTransitions(ctx context.Context, tc tclient.Client, id, runID string) (n int64, found bool, err error) {
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := tc.DescribeWorkflowExecution(ctx, id, runID)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("describing %s: %w", id, err)
		}
		info := d.GetWorkflowExecutionInfo()
		atRest := info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
			(d.GetPendingWorkflowTask() == nil && len(d.GetPendingActivities()) == 0 && len(d.GetPendingChildren()) == 0)
		if atRest {
			return info.GetStateTransitionCount(), true, nil
		}
		if time.Now().After(deadline) {
			return 0, false, fmt.Errorf("%s still has work pending after a minute", id)
		}
		select {
		case <-ctx.Done():
			return 0, false, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// longRunningTransitions returns the state transitions of the samples'
// long-running workflows that exist, at rest.
func longRunningTransitions(ctx context.Context, tc tclient.Client, samples []poolSample) (map[string]int64, error) {
	out := map[string]int64{}
	for _, s := range samples {
		if s.LongRunning == "" {
			continue
		}
		n, found, err := settledTransitions(ctx, tc, s.LongRunning, "")
		if err != nil {
			return nil, err
		}
		if found {
			out[s.LongRunning] = n
		}
	}
	return out, nil
}

// executionsTransitions sums the state transitions of executions, each at
// rest; with more than limit of them, of limit spread over them, scaled
// to all.
func executionsTransitions(ctx context.Context, tc tclient.Client, execs []execRef, limit int) (float64, error) {
	if len(execs) == 0 {
		return 0, nil
	}
	k := min(len(execs), limit)
	var sum int64
	for j := range k {
		e := execs[j*len(execs)/k]
		n, _, err := settledTransitions(ctx, tc, e.ID, e.RunID)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return float64(sum) * float64(len(execs)) / float64(k), nil
}
