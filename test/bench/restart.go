package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"
)

// restartResult is what restarting the starter over N up-to-date pools
// costs.
type restartResult struct {
	// Seconds: from launching the new starter until it is ready (its
	// /readyz), has reconciled at least once per pool (its initial list:
	// controller_runtime_reconcile_total over its controllers), its work
	// queues are empty with no reconcile running, and its reconcile, queue
	// and ate_starter_* counters have stopped moving: Seconds is when they
	// last moved, seen by polling its /metrics every 100 ms; the bench
	// then watches them unchanged for 1 s.
	Seconds      float64 `json:"seconds"`
	ReadySeconds float64 `json:"ready_seconds"`
	StopSeconds  float64 `json:"stop_seconds"`
	// Reconciles: controller_runtime_reconcile_total of the new starter,
	// every controller; QueueAdds: workqueue_adds_total.
	Reconciles float64 `json:"reconciles"`
	QueueAdds  float64 `json:"queue_adds"`
	// ExecutionsStarted: executions started from the launch on
	// (CountWorkflowExecutions on StartTime), until all were closed.
	ExecutionsStarted int64 `json:"executions_started"`
	// RunningBefore: executions running before the restart (signals would
	// land on them); RunningSampled of them were described before and
	// after.
	RunningBefore  int `json:"running_executions_before"`
	RunningSampled int `json:"running_executions_sampled"`
	// StateTransitions: those of the executions started (described, up to
	// 100, scaled to all) plus what the running ones gained (sampled,
	// scaled); PerPool divides by N.
	StateTransitions        float64            `json:"state_transitions"`
	StateTransitionsPerPool float64            `json:"state_transitions_per_pool"`
	StarterMetrics          map[string]float64 `json:"starter_metrics"`
	CPUSeconds              map[string]float64 `json:"cpu_seconds"`
}

// initialListGrace is how long after its readiness a restarted starter
// that has reconciled fewer times than there are pools is waited for.
const initialListGrace = 20 * time.Second

// describeLimit bounds the Describe calls of one measurement.
const describeLimit = 100

// restartStarter stops the starter and starts it again over the n
// up-to-date pools, and measures what that costs. It returns the starter
// left running, even with an error: the old one if it failed before
// stopping it, the new one (or nil) after.
func restartStarter(ctx context.Context, s *stack, old *process, bin, logDir string, env []string, n int, log *slog.Logger) (*restartResult, *process, error) {
	res := &restartResult{}
	running, err := listExecutions(ctx, s.tc, `ExecutionStatus = "Running"`)
	if err != nil {
		return nil, old, err
	}
	res.RunningBefore, res.RunningSampled = len(running), min(len(running), describeLimit)
	runningBefore, err := executionsTransitions(ctx, s.tc, running, describeLimit)
	if err != nil {
		return nil, old, err
	}

	stopping := time.Now()
	if err := old.stop(); err != nil {
		return nil, nil, fmt.Errorf("stopping the starter: %w", err)
	}
	res.StopSeconds = secs(time.Since(stopping))
	cpu := takeCPU()
	launched := time.Now()
	sp, err := startProcess("starter", bin, logDir, env)
	if err != nil {
		return nil, nil, fmt.Errorf("starting the starter again: %w", err)
	}
	if err := sp.waitReady(ctx, timeoutFor(2*time.Minute, n)); err != nil {
		return nil, sp, err
	}
	ready := time.Now()
	res.ReadySeconds = secs(ready.Sub(launched))
	settled, last, err := settleStarter(ctx, sp, ready, n)
	if err != nil {
		return nil, sp, err
	}
	res.Seconds = secs(settled.Sub(launched))
	res.Reconciles, res.QueueAdds = last["reconciles"], last["adds"]
	res.CPUSeconds = takeCPU().since(cpu)

	// What it cost Temporal: the executions it started, once all are
	// closed, and what the running ones gained.
	started := startedQuery(launched, time.Time{})
	if err := awaitNoneRunning(ctx, s, started, "the executions started by the restarted starter to close"); err != nil {
		return nil, sp, err
	}
	execs, err := listExecutions(ctx, s.tc, started)
	if err != nil {
		return nil, sp, err
	}
	res.ExecutionsStarted = int64(len(execs))
	if res.StateTransitions, err = executionsTransitions(ctx, s.tc, execs, describeLimit); err != nil {
		return nil, sp, err
	}
	runningAfter, err := executionsTransitions(ctx, s.tc, running, describeLimit)
	if err != nil {
		return nil, sp, err
	}
	res.StateTransitions += runningAfter - runningBefore
	res.StateTransitions = round(res.StateTransitions, 1)
	res.StateTransitionsPerPool = round(res.StateTransitions/float64(n), 3)
	m, err := processMetrics(ctx, sp.metricsAddr, "kind")
	if err != nil {
		return nil, sp, fmt.Errorf("starter metrics: %w", err)
	}
	res.StarterMetrics = starterMetrics(m)
	log.Info("starter restarted", "seconds", res.Seconds, "readySeconds", res.ReadySeconds, "reconciles", res.Reconciles,
		"executionsStarted", res.ExecutionsStarted, "stateTransitionsPerPool", res.StateTransitionsPerPool, "cpu", formatCPU(res.CPUSeconds))
	return res, sp, nil
}

// settleStarter waits until the starter has reconciled n times (its
// initial list: every pool once; a starter that reconciles fewer is given
// initialListGrace from from), its work queues are empty with no reconcile
// running, and its counters have not moved for a second; it returns when
// they last moved (not before from) and their last values.
func settleStarter(ctx context.Context, sp *process, from time.Time, n int) (time.Time, map[string]float64, error) {
	var last map[string]float64
	lastChange := from
	err := untilEvery(ctx, 100*time.Millisecond, timeoutFor(5*time.Minute, n), "the restarted starter to settle", func() (bool, string) {
		m, err := processMetrics(ctx, sp.metricsAddr)
		if err != nil {
			return false, err.Error()
		}
		cur := map[string]float64{}
		for k, v := range m {
			switch {
			case strings.HasPrefix(k, "controller_runtime_reconcile_total"):
				cur["reconciles"] += v
			case strings.HasPrefix(k, "workqueue_adds_total"):
				cur["adds"] += v
			case strings.HasPrefix(k, "workqueue_depth"):
				cur["depth"] += v
			case strings.HasPrefix(k, "controller_runtime_active_workers"):
				cur["active"] += v
			case strings.HasPrefix(k, "ate_starter_"):
				cur["starter"] += v
			}
		}
		if !maps.Equal(cur, last) {
			last, lastChange = cur, time.Now()
		}
		listed := cur["reconciles"] >= float64(n) || time.Since(from) >= initialListGrace
		idle := cur["depth"] == 0 && cur["active"] == 0
		return listed && idle && time.Since(lastChange) >= time.Second,
			fmt.Sprintf("%g reconciles, %g queued, %g running", cur["reconciles"], cur["depth"], cur["active"])
	})
	if lastChange.Before(from) {
		lastChange = from
	}
	return lastChange, last, err
}

// awaitNoneRunning waits until no execution the query selects is running,
// on three polls in a row 100 ms apart (visibility follows a start by a
// task of the server's visibility queue).
func awaitNoneRunning(ctx context.Context, s *stack, query, what string) error {
	quiet := 0
	var lastErr error
	err := untilEvery(ctx, 100*time.Millisecond, 5*time.Minute, what, func() (bool, string) {
		c, err := countExecutions(ctx, s.tc, query+` AND ExecutionStatus = "Running"`)
		if err != nil {
			lastErr = err
			return false, err.Error()
		}
		if c > 0 {
			quiet = 0
			return false, fmt.Sprintf("%d running", c)
		}
		quiet++
		return quiet >= 3, "none running"
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("%w (last error: %w)", err, lastErr)
	}
	return err
}
