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

// The Temporal floor: workflows of exactly the product's shape per switch,
// whose activities do nothing. A pool-shaped parent, woken by a
// signal-with-start, drains its signals, runs one local activity (Observe),
// runs a child (the "local-steps" version marker, then Protect, Claim,
// ReadConfig, Confirm, RecordEvent, local or regular as the product's switch
// runs them, then the Outcome search attribute and the memo, as the
// product's switch does) with the product's child options, and waits for
// the next signal: the product applies the Deployment only when it is not
// as wanted, and a switch does not change it. Activity and local activity
// options are the product's. Only the bodies are empty.
const (
	floorPoolType     = "BenchFloorPool"
	floorIDPrefix     = "bench-floor/"
	floorSignalWorker = 8 // the starter's default concurrency
)

// shape is a workflow shape per switch, timed with no-op activities.
type shape string

const (
	// shapeProduct is the product's: a child of five activities, the pool
	// writes (Claim, Confirm) regular, the rest local; no Deployment apply
	// (the Deployment does not depend on the config).
	shapeProduct shape = "product"
	// shapeMerged: the same steps in two activities (protect+claim;
	// read+confirm/roll back+event).
	shapeMerged shape = "merged"
	// shapeLocal: the five steps as local activities.
	shapeLocal shape = "local"
)

func (s shape) switchType() string { return "BenchSwitch-" + string(s) }

var shapes = []shape{shapeProduct, shapeMerged, shapeLocal}

type floorRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (r floorRef) key() string { return r.Namespace + "/" + r.Name }

type floorPoolInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Prefix begins the workflow IDs of the shape.
	Prefix string `json:"prefix"`
	Shape  shape  `json:"shape"`
	// Warm starts the workflow idle, as a pool workflow that has already
	// passed once: it reports that it is ready and waits for a signal.
	Warm bool `json:"warm,omitempty"`
}

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

func drainSignals(ch workflow.ReceiveChannel) {
	for ch.ReceiveAsync(nil) {
	}
}

// floorPool is the pool workflow's shape.
func floorPool(ctx workflow.Context, in floorPoolInput) error {
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	ref := floorRef{Namespace: in.Namespace, Name: in.Name}
	if in.Warm {
		if err := workflow.ExecuteLocalActivity(floorLocal(ctx), nilActs.Ready, ref.key()).Get(ctx, nil); err != nil {
			return err
		}
		reresolve.Receive(ctx, nil)
	}
	switches := 0
	for {
		drainSignals(reresolve)
		var obs floorObservation
		if err := workflow.ExecuteLocalActivity(floorLocal(ctx), nilActs.Observe, ref).Get(ctx, &obs); err != nil {
			return err
		}
		ref.UID = obs.UID
		switches++
		sw := floorSwitchInput{Pool: ref, Class: "gvisor", From: oldDefault, To: newDefault, Generation: obs.Generation}
		key := in.Prefix + wfapi.PoolKey(ref.Namespace, ref.Name)
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: fmt.Sprintf("%s/switch/%d", key, switches),
			TypedSearchAttributes: temporal.NewSearchAttributes(
				searchattr.WorkerPoolKey.ValueSet(key),
				searchattr.SandboxClassKey.ValueSet(sw.Class),
				searchattr.ToConfigKey.ValueSet(sw.To),
				searchattr.FromConfigKey.ValueSet(sw.From),
			),
			Memo:                  map[string]any{"summary": fmt.Sprintf("%s: sandbox class %q from %q to %q", key, sw.Class, sw.From, sw.To)},
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_TERMINATE,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		})
		var out floorResult
		if err := workflow.ExecuteChildWorkflow(cctx, in.Shape.switchType(), sw).Get(ctx, &out); err != nil {
			return err
		}
		if !workflow.IsReplaying(ctx) {
			// A pass after a switch applies nothing: the Observation shows
			// the Deployment as wanted. Telling the bench the pass is over
			// from workflow code adds no event (replays tell it nothing).
			floorCurrent.Load().passDone(ref.key())
		}
		reresolve.Receive(ctx, nil)
	}
}

// floorSwitch is the switch workflow's shape (workflows.Switch): the
// version it records, five steps of which the pool writes (Claim, Confirm)
// are regular activities and the rest local ones, then the outcome as a
// search attribute and in the memo.
func floorSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorActivities(ctx)
	local := floorLocalSteps(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	// The product's switch asks this once per run: a marker and a
	// TemporalChangeVersion search attribute update in every switch's
	// history.
	workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1)
	var check floorCheck
	if err := workflow.ExecuteLocalActivity(local, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	var ok bool
	if err := workflow.ExecuteActivity(ctx, nilActs.Claim, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	var live floorCheck
	if err := workflow.ExecuteLocalActivity(local, nilActs.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteActivity(ctx, nilActs.Confirm, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(local, nilActs.RecordEvent, in.Pool).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in)
}

// mergedSwitch runs the same steps in two activities: protect then claim
// (the finalizer still lands before the claim, and a retry repeats both,
// each idempotent), and read then confirm or roll back then the event (the
// event still follows the write it reports).
func mergedSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorActivities(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	var check floorCheck
	if err := workflow.ExecuteActivity(ctx, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteActivity(ctx, nilActs.Settle, in).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in)
}

// localSwitch runs the same five steps, in the same order, each still
// retried until it succeeds and recorded in the switch's own history, as
// local activities, which the worker runs inside the workflow task: one
// marker event each instead of three events and a round trip through the
// server's queues.
func localSwitch(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	ctx = floorLocal(ctx)
	workflow.GetLogger(ctx).Info("switching", "pool", in.Pool.key(), "from", in.From, "to", in.To)
	var check floorCheck
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Protect, in).Get(ctx, &check); err != nil {
		return nil, err
	}
	var ok bool
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Claim, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	var live floorCheck
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.ReadConfig, in.To).Get(ctx, &live); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.Confirm, in).Get(ctx, &ok); err != nil {
		return nil, err
	}
	if err := workflow.ExecuteLocalActivity(ctx, nilActs.RecordEvent, in.Pool).Get(ctx, nil); err != nil {
		return nil, err
	}
	return finishShape(ctx, in)
}

func finishShape(ctx workflow.Context, in floorSwitchInput) (*floorResult, error) {
	res := &floorResult{Outcome: wfapi.OutcomeConfirmed}
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.OutcomeKey.ValueSet(res.Outcome)); err != nil {
		return nil, err
	}
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"outcome": res.Outcome, "sandbox_class": in.Class})
	m.Counter("ate_switches").Inc(1)
	m.Timer("ate_switch_duration").Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
	summary := fmt.Sprintf("%s: sandbox class %q from %q to %q: %s", in.Pool.key(), in.Class, in.From, in.To, res.Outcome)
	if err := workflow.UpsertMemo(ctx, map[string]any{"summary": summary}); err != nil {
		return nil, err
	}
	return res, nil
}

// floorRun is one measurement of a shape on the bench's Temporal server.
type floorRun struct {
	// Seconds: from the first signal until every pool's RecordEvent ran
	// (the point the product is timed to); FullSeconds: until every
	// pool's pass ended.
	Seconds, FullSeconds, WarmSeconds float64
	Shape                             shape
	TaskQueue                         string
	// Start and End bound the timed part, for the history window.
	Start, End time.Time
	// CPU per process during the timed part; the floor worker's mean
	// schedule-to-start latencies.
	CPU                           map[string]float64
	ActivityScheduleToStartMs     float64
	WorkflowTaskScheduleToStartMs float64
}

// temporalFloor starts n pool-shaped workflows idle (not timed), then
// times n signal-with-starts, sent as the starter sends them, until every
// pass has run. The worker runs in this process with opts.
func temporalFloor(ctx context.Context, tc tclient.Client, n int, opts worker.Options, sh shape, prefix string) (*floorRun, error) {
	poolType := floorPoolType
	run := &floorRun{Shape: sh, TaskQueue: fmt.Sprintf("bench-%s-%d", sh, time.Now().UnixNano())}
	acts := &floorActs{}
	acts.reset(n)
	floorCurrent.Store(acts)
	lat := newLatencies()
	wc, err := tclient.NewClientFromExisting(tc, tclient.Options{MetricsHandler: lat, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	w := worker.New(wc, run.TaskQueue, opts)
	w.RegisterWorkflowWithOptions(floorPool, workflow.RegisterOptions{Name: floorPoolType})
	w.RegisterWorkflowWithOptions(floorSwitch, workflow.RegisterOptions{Name: shapeProduct.switchType()})
	w.RegisterWorkflowWithOptions(mergedSwitch, workflow.RegisterOptions{Name: shapeMerged.switchType()})
	w.RegisterWorkflowWithOptions(localSwitch, workflow.RegisterOptions{Name: shapeLocal.switchType()})
	w.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()

	id := func(i int) string { return prefix + wfapi.PoolKey(namespaceName(i), poolName(i)) }
	startOpts := func(i int) tclient.StartWorkflowOptions {
		return tclient.StartWorkflowOptions{
			ID: id(i), TaskQueue: run.TaskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.WorkerPoolKey.ValueSet(id(i))),
			Memo:                  map[string]any{"summary": "keeps WorkerPool " + id(i) + " on its SandboxConfig"},
		}
	}
	warm := time.Now()
	if err := parallel(ctx, n, floorSignalWorker, func(ctx context.Context, i int) error {
		_, err := tc.ExecuteWorkflow(ctx, startOpts(i), poolType, floorPoolInput{Namespace: namespaceName(i), Name: poolName(i), Prefix: prefix, Shape: sh, Warm: true})
		return err
	}); err != nil {
		return nil, fmt.Errorf("starting the floor's pool workflows: %w", err)
	}
	ready, events, passes := acts.trackers()
	if err := waitTimeout(ctx, ready, 10*time.Minute); err != nil {
		return nil, fmt.Errorf("floor pools did not start: %w", err)
	}
	run.WarmSeconds = time.Since(warm).Seconds()
	time.Sleep(time.Second) // let the last start's workflow task complete

	lat.reset()
	cpu := takeCPU()
	start := time.Now()
	if err := parallel(ctx, n, floorSignalWorker, func(ctx context.Context, i int) error {
		_, err := tc.SignalWithStartWorkflow(ctx, id(i), wfapi.SignalReresolve, nil, startOpts(i), poolType,
			floorPoolInput{Namespace: namespaceName(i), Name: poolName(i), Prefix: prefix, Shape: sh})
		return err
	}); err != nil {
		return nil, fmt.Errorf("signalling the floor's pool workflows: %w", err)
	}
	if err := waitTimeout(ctx, events, 15*time.Minute); err != nil {
		return nil, fmt.Errorf("floor switches did not finish: %w", err)
	}
	run.Seconds = time.Since(start).Seconds()
	if err := waitTimeout(ctx, passes, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("floor passes did not finish: %w", err)
	}
	run.FullSeconds = time.Since(start).Seconds()
	run.CPU = takeCPU().since(cpu)
	run.ActivityScheduleToStartMs = lat.meanMs("temporal_activity_schedule_to_start_latency")
	run.WorkflowTaskScheduleToStartMs = lat.meanMs("temporal_workflow_task_schedule_to_start_latency")
	run.Start, run.End = start, time.Now().Add(time.Second)
	return run, nil
}

func waitTimeout(ctx context.Context, t *tracker, d time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("timed out after %s", d))
	defer cancel()
	return t.wait(ctx)
}

// latencies is a client.MetricsHandler that keeps only the mean of the
// schedule-to-start latencies of the floor's worker, to compare with the
// product worker's.
type latencies struct {
	mu   sync.Mutex
	sum  map[string]time.Duration
	n    map[string]int
	tags map[string]string
}

func newLatencies() *latencies {
	return &latencies{sum: map[string]time.Duration{}, n: map[string]int{}}
}

func (l *latencies) WithTags(map[string]string) tclient.MetricsHandler { return l }
func (l *latencies) Counter(string) tclient.MetricsCounter {
	return tclient.MetricsNopHandler.Counter("")
}
func (l *latencies) Gauge(string) tclient.MetricsGauge { return tclient.MetricsNopHandler.Gauge("") }
func (l *latencies) Timer(name string) tclient.MetricsTimer {
	if name != "temporal_activity_schedule_to_start_latency" && name != "temporal_workflow_task_schedule_to_start_latency" {
		return tclient.MetricsNopHandler.Timer(name)
	}
	return timerFunc(func(d time.Duration) {
		l.mu.Lock()
		l.sum[name] += d
		l.n[name]++
		l.mu.Unlock()
	})
}

func (l *latencies) meanMs(name string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[name] == 0 {
		return 0
	}
	return round(float64(l.sum[name].Microseconds())/1000/float64(l.n[name]), 1)
}

func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.sum)
	clear(l.n)
}

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }
