package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/workflows"
)

// The Temporal floor: the product's own workflows (workflows.RegisterWorkflows)
// on a worker in this process that runs the product's worker options, with
// activities that do nothing (noopActivities), on the bench's server. The
// switches are started as the starter starts them (wfapi.StartSwitch), so
// the floor is what Temporal costs a switch of the product's shape: its
// workflow tasks, its regular and local activities, its search attribute
// and memo writes, without the API server's work.
//
// The floor's pools are not in Kubernetes: their namespaces carry the
// run's prefix, so each run's switch workflow IDs are its own.

// floorStarters is how many switches the floor starts at once: the
// starter's default concurrency.
const floorStarters = 8

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

// wait waits at most d until every pool reached the point.
func (t *tracker) wait(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("timed out after %s", d))
	defer cancel()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("%d of %d: %w", len(t.seen), t.target, context.Cause(ctx))
	}
}

// floorRun is one measurement of the floor on the bench's Temporal server.
type floorRun struct {
	// Seconds: from the first start until every pool's RecordEvent ran
	// (the point the product is timed to); FullSeconds: until every
	// switch's last workflow task ran (its ate_switches count).
	Seconds, FullSeconds float64
	TaskQueue            string
	// Start and End bound the timed part, for the history window.
	Start, End time.Time
	// Sample: the pools whose executions are measured.
	Sample []string
	// CPU per process during the timed part; the floor worker's mean
	// schedule-to-start latencies.
	CPU                           map[string]float64
	ActivityScheduleToStartMs     float64
	WorkflowTaskScheduleToStartMs float64
}

// temporalFloor times n switches of the product's workflows, started as the
// starter starts them, on a worker in this process with opts. prefix
// names the run's pools (see floorPool). eager starts them on the worker's
// own client with Temporal's eager workflow start: the server hands the
// first workflow task back in the start's response, to that worker,
// instead of through matching.
func temporalFloor(ctx context.Context, tc tclient.Client, n int, opts worker.Options, prefix string, eager bool) (*floorRun, error) {
	run := &floorRun{TaskQueue: fmt.Sprintf("bench-floor-%d", time.Now().UnixNano())}
	acts := &noopActivities{}
	events, passes := newTracker(n), newTracker(n)
	acts.events.Store(events)
	var switched atomic.Int64
	lat := newLatencies(func() { passes.mark(strconv.FormatInt(switched.Add(1), 10)) })
	wc, err := tclient.NewClientFromExisting(tc, tclient.Options{MetricsHandler: lat, Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("floor worker's client: %w", err)
	}
	defer wc.Close()
	w := worker.New(wc, run.TaskQueue, opts)
	workflows.RegisterWorkflows(w)
	// Under the method names, as workflows.RegisterActivities registers
	// the real ones.
	w.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("starting the floor's worker: %w", err)
	}
	defer w.Stop()

	run.Sample = floorSample(prefix, n, min(5, n))
	lat.reset()
	cpu := takeCPU()
	start := time.Now()
	if err := parallel(ctx, n, floorStarters, func(ctx context.Context, i int) error {
		scope, in := wfapi.Scope{Cluster: benchCluster, TaskQueue: run.TaskQueue}, floorMove(prefix, i)
		if !eager {
			return wfapi.StartSwitch(ctx, tc, scope, in)
		}
		o := wfapi.SwitchStartOptions(scope, in)
		o.EnableEagerStart = true
		_, err := wc.ExecuteWorkflow(ctx, o, wfapi.SwitchWorkflow, in)
		return err
	}); err != nil {
		return nil, fmt.Errorf("starting the floor's switches: %w", err)
	}
	if err := events.wait(ctx, timeoutFor(15*time.Minute, n)); err != nil {
		return nil, fmt.Errorf("floor switches did not finish: %w", err)
	}
	run.Seconds = time.Since(start).Seconds()
	if err := passes.wait(ctx, timeoutFor(5*time.Minute, n)); err != nil {
		return nil, fmt.Errorf("floor switches' last workflow tasks did not run: %w", err)
	}
	run.FullSeconds = time.Since(start).Seconds()
	run.CPU = takeCPU().since(cpu)
	run.ActivityScheduleToStartMs = lat.meanMs("temporal_activity_schedule_to_start_latency")
	run.WorkflowTaskScheduleToStartMs = lat.meanMs("temporal_workflow_task_schedule_to_start_latency")
	// The window for the histories: the last workflow task's completion
	// reaches the server just after the workflow code reported it.
	run.Start, run.End = start, time.Now().Add(time.Second)
	return run, nil
}

// floorPool is the i-th pool of a floor run: the bench's pool names, in
// namespaces prefixed by the run's prefix (a DNS label, as the switch
// checks its pool's namespace).
func floorPool(prefix string, i int) wfapi.PoolRef {
	ns, name := prefix+namespaceName(i), poolName(i)
	return wfapi.PoolRef{Namespace: ns, Name: name, UID: "uid-" + ns + "-" + name}
}

// floorMove is the switch every floor pool makes, as the starter plans it:
// gvisor from the old default to the new one, the pool unpinned.
func floorMove(prefix string, i int) wfapi.SwitchInput {
	m := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: oldDefault, To: newDefault}
	return wfapi.MoveInput(floorPool(prefix, i), m, 1, "1")
}

// floorSample picks k of the floor's n pools, spread over them.
func floorSample(prefix string, n, k int) []string {
	var out []string
	for j := range k {
		p := floorPool(prefix, j*n/k)
		out = append(out, wfapi.PoolKey(p.Namespace, p.Name))
	}
	return out
}
