package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// The Temporal floor: workflows of a switch's shape whose activities do
// nothing, on the bench's server, with a worker in this process that runs
// the product's worker options and the product's activity and local
// activity options. Only the bodies are empty. The lean shape (floorlean.go)
// is the product's; the pool+child shapes (floorchild.go) are the ones it
// replaced, kept selectable (-shapes) so the decision can be compared on the
// same server.
const (
	floorIDPrefix     = "bench-floor/"
	floorSignalWorker = 8 // the starter's default concurrency
)

// shape is a workflow shape per switch, timed with no-op activities.
type shape string

const (
	// shapeLean is the product's: a top-level switch execution per switch,
	// Protect local then Claim regular (eagerly dispatched) in its first
	// workflow task, ReadConfig, Confirm, RecordEvent and WakeReleases local
	// in its second, then the Outcome upsert.
	shapeLean shape = "lean"
	// shapeChild is the shape before it: a long-running pool workflow,
	// signalled, runs Observe (local) and a child switch of five steps, the
	// pool writes (Claim, Confirm) regular, the rest local.
	shapeChild shape = "child"
	// shapeMerged: the pool workflow with a child of two activities
	// (protect+claim; read+confirm/roll back+event).
	shapeMerged shape = "merged"
	// shapeLocalChild: the pool workflow with a child of five local
	// activities.
	shapeLocalChild shape = "local-child"
)

var shapes = []shape{shapeLean, shapeChild, shapeMerged, shapeLocalChild}

// parseShape reads a -shapes entry; "product" names the product's shape.
func parseShape(s string) (shape, bool) {
	if s == "product" {
		return shapeLean, true
	}
	for _, sh := range shapes {
		if string(sh) == s {
			return sh, true
		}
	}
	return "", false
}

func (s shape) switchType() string { return "BenchSwitch-" + string(s) }

// pooled reports whether the shape keeps a long-running pool workflow.
func (s shape) pooled() bool { return s != shapeLean }

type floorRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (r floorRef) key() string { return r.Namespace + "/" + r.Name }

type floorSwitchInput struct {
	Pool       floorRef `json:"pool"`
	Class      string   `json:"class"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to"`
	Generation int64    `json:"generation"`
}

type floorCheck struct {
	OK      bool   `json:"ok"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type floorResult struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// tracker records which pools reached a point, and when the last did.
type tracker struct {
	mu     sync.Mutex
	seen   map[string]time.Time
	target int
	done   chan struct{}
}

func newTracker(target int) *tracker {
	return &tracker{seen: map[string]time.Time{}, target: target, done: make(chan struct{})}
}

func (t *tracker) mark(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[key]; ok {
		return
	}
	t.seen[key] = time.Now()
	if len(t.seen) == t.target {
		close(t.done)
	}
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}

func (t *tracker) wait(ctx context.Context) error {
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d: %w", t.count(), t.target, context.Cause(ctx))
	}
}

// floorActs are the no-op activities. They only tell the bench how far
// each pool got, in this process, without asking the server.
type floorActs struct {
	mu                    sync.Mutex
	ready, events, passes *tracker
}

func (a *floorActs) trackers() (ready, events, passes *tracker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ready, a.events, a.passes
}

func (a *floorActs) reset(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ready, a.events, a.passes = newTracker(n), newTracker(n), newTracker(n)
}

type floorObservation struct {
	Exists     bool   `json:"exists"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
}

func (a *floorActs) Ready(_ context.Context, key string) error {
	r, _, _ := a.trackers()
	r.mark(key)
	return nil
}

func (a *floorActs) Observe(_ context.Context, ref floorRef) (*floorObservation, error) {
	return &floorObservation{Exists: true, UID: "uid-" + ref.key(), Generation: 1}, nil
}

func (a *floorActs) Protect(context.Context, floorSwitchInput) (*floorCheck, error) {
	return &floorCheck{OK: true}, nil
}

func (a *floorActs) Claim(context.Context, floorSwitchInput) (bool, error) { return true, nil }

func (a *floorActs) ReadConfig(context.Context, string) (*floorCheck, error) {
	return &floorCheck{OK: true}, nil
}

func (a *floorActs) Confirm(context.Context, floorSwitchInput) (bool, error) { return true, nil }

func (a *floorActs) RecordEvent(_ context.Context, ref floorRef) error {
	_, e, _ := a.trackers()
	e.mark(ref.key())
	return nil
}

// WakeReleases is the lean switch's last step (the product runs it when
// the class left a config in deletion; the floor always does).
func (a *floorActs) WakeReleases(context.Context, []string) error { return nil }

// Settle is the merged shape's second activity: read, confirm, event.
func (a *floorActs) Settle(_ context.Context, in floorSwitchInput) error {
	_, e, _ := a.trackers()
	e.mark(in.Pool.key())
	return nil
}

func (a *floorActs) passDone(key string) {
	_, _, ap := a.trackers()
	ap.mark(key)
}

// floorCurrent is the floor being timed, for workflow code to report to.
var floorCurrent atomic.Pointer[floorActs]

// nilActs names the activities in workflow code, as the product's act does.
var nilActs *floorActs

// The product's activity and local activity options (workflows/options.go).
var floorRetry = &temporal.RetryPolicy{
	InitialInterval:    200 * time.Millisecond,
	BackoffCoefficient: 2,
	MaximumInterval:    30 * time.Second,
}

func floorActivities(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: floorRetry})
}

func floorLocal(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: floorRetry})
}

// floorLocalSteps are the options of the product switch's local steps.
func floorLocalSteps(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: 10 * 365 * 24 * time.Hour, RetryPolicy: floorRetry,
	})
}

// finishShape ends a switch as the product's does: the Outcome search
// attribute, the switch metrics and, with memo, the memo's summary (the
// pool+child shapes' switch rewrote it; the lean one sets it at start).
func finishShape(ctx workflow.Context, in floorSwitchInput, memo bool) (*floorResult, error) {
	res := &floorResult{Outcome: wfapi.OutcomeConfirmed}
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome)); err != nil {
		return nil, err
	}
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": res.Outcome, "sandbox_class": in.Class})
	m.Counter("ate_switches").Inc(1)
	m.Timer("ate_switch_duration").Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	if !memo {
		return res, nil
	}
	summary := fmt.Sprintf("%s: sandbox class %q from %q to %q: %s", in.Pool.key(), in.Class, in.From, in.To, res.Outcome)
	if err := workflow.UpsertMemo(ctx, map[string]any{"summary": summary}); err != nil {
		return nil, err
	}
	return res, nil
}

// floorRun is one measurement of a shape on the bench's Temporal server.
type floorRun struct {
	// Seconds: from the first start or signal until every pool's
	// RecordEvent ran (the point the product is timed to); FullSeconds:
	// until every switch's (or pass's) last workflow task ran.
	Seconds, FullSeconds, WarmSeconds float64
	Shape                             shape
	TaskQueue                         string
	// Start and End bound the timed part, for the history window.
	Start, End time.Time
	// Sample: the pools whose executions are measured; lrBefore and
	// lrAfter: the state transitions of their long-running workflows (the
	// pool+child shapes' pool workflows) before and after the timed part.
	Sample            []poolSample
	lrBefore, lrAfter map[string]int64
	// CPU per process during the timed part; the floor worker's mean
	// schedule-to-start latencies.
	CPU                           map[string]float64
	ActivityScheduleToStartMs     float64
	WorkflowTaskScheduleToStartMs float64
}

// temporalFloor times n switches of shape sh: for the lean shape, n
// top-level executions started as the starter starts them; for the
// pool+child shapes, n pool workflows started idle (not timed), then n
// signal-with-starts. The worker runs in this process with opts.
func temporalFloor(ctx context.Context, tc tclient.Client, n int, opts worker.Options, sh shape, prefix string) (*floorRun, error) {
	run := &floorRun{Shape: sh, TaskQueue: fmt.Sprintf("bench-%s-%d", sh, time.Now().UnixNano())}
	acts := &floorActs{}
	acts.reset(n)
	floorCurrent.Store(acts)
	lat := newLatencies()
	wc, err := tclient.NewClientFromExisting(tc, tclient.Options{MetricsHandler: lat, Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("floor worker's client: %w", err)
	}
	defer wc.Close()
	w := worker.New(wc, run.TaskQueue, opts)
	registerFloor(w, acts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("starting the floor's worker: %w", err)
	}
	defer w.Stop()

	run.Sample = floorSample(prefix, n, min(5, n))
	if sh.pooled() {
		warm := time.Now()
		if err := startFloorPools(ctx, tc, lat, acts, n, sh, prefix, run.TaskQueue); err != nil {
			return nil, err
		}
		run.WarmSeconds = time.Since(warm).Seconds()
	}
	if run.lrBefore, err = longRunningTransitions(ctx, tc, run.Sample); err != nil {
		return nil, err
	}

	_, events, passes := acts.trackers()
	lat.reset()
	cpu := takeCPU()
	start := time.Now()
	if sh.pooled() {
		err = signalFloorPools(ctx, tc, n, sh, prefix, run.TaskQueue)
	} else {
		err = startLeanSwitches(ctx, tc, n, prefix, run.TaskQueue)
	}
	if err != nil {
		return nil, err
	}
	if err := waitTimeout(ctx, events, 15*time.Minute); err != nil {
		return nil, fmt.Errorf("floor switches did not finish: %w", err)
	}
	run.Seconds = time.Since(start).Seconds()
	if err := waitTimeout(ctx, passes, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("floor switches' last workflow tasks did not run: %w", err)
	}
	run.FullSeconds = time.Since(start).Seconds()
	run.CPU = takeCPU().since(cpu)
	run.ActivityScheduleToStartMs = lat.meanMs("temporal_activity_schedule_to_start_latency")
	run.WorkflowTaskScheduleToStartMs = lat.meanMs("temporal_workflow_task_schedule_to_start_latency")
	// The window for the histories: the last workflow task's completion
	// reaches the server just after the workflow code reported it.
	run.Start, run.End = start, time.Now().Add(time.Second)
	if run.lrAfter, err = longRunningTransitions(ctx, tc, run.Sample); err != nil {
		return nil, err
	}
	return run, nil
}

func registerFloor(w worker.Worker, acts *floorActs) {
	w.RegisterWorkflowWithOptions(floorPool, workflow.RegisterOptions{Name: floorPoolType})
	w.RegisterWorkflowWithOptions(childSwitch, workflow.RegisterOptions{Name: shapeChild.switchType()})
	w.RegisterWorkflowWithOptions(mergedSwitch, workflow.RegisterOptions{Name: shapeMerged.switchType()})
	w.RegisterWorkflowWithOptions(localChildSwitch, workflow.RegisterOptions{Name: shapeLocalChild.switchType()})
	w.RegisterWorkflowWithOptions(leanSwitch, workflow.RegisterOptions{Name: shapeLean.switchType()})
	w.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
}

// floorSample picks k of the floor's n pools, spread over them.
func floorSample(prefix string, n, k int) []poolSample {
	var out []poolSample
	for j := range k {
		i := j * n / k
		id := prefix + wfapi.PoolKey(namespaceName(i), poolName(i))
		out = append(out, poolSample{Key: id, LongRunning: id})
	}
	return out
}

// floorSearchAttributes are a switch's search attributes as the product
// sets them at start.
func floorSearchAttributes(key string, sw floorSwitchInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		searchattr.WorkerPoolKey.ValueSet(key),
		searchattr.SandboxClassKey.ValueSet(sw.Class),
		searchattr.ToConfigKey.ValueSet(sw.To),
		searchattr.FromConfigKey.ValueSet(sw.From),
	)
}

// floorSwitchFor is the switch every floor runs: gvisor from the old
// default to the new one.
func floorSwitchFor(ref floorRef) floorSwitchInput {
	return floorSwitchInput{Pool: ref, Class: "gvisor", From: oldDefault, To: newDefault, Generation: 1}
}

var reuseAllowDuplicate = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE

func waitTimeout(ctx context.Context, t *tracker, d time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("timed out after %s", d))
	defer cancel()
	return t.wait(ctx)
}
