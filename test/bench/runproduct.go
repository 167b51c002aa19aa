package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/wfapi"
)

// benchCluster is the name the bench gives its one cluster.
const benchCluster = wfapi.Cluster("bench")

// productEnv configures the worker and the starter for the stack.
func productEnv(cfg config, s *stack) []string {
	return []string{
		"KUBECONFIG=" + s.kubeconfig,
		"TEMPORAL_ADDRESS=" + s.temporal.Address(),
		"TEMPORAL_NAMESPACE=" + s.temporal.Namespace(),
		// The product's defaults but a readable cluster name: the task
		// queue is the cluster's own, ate-orchestrator-bench.
		"ATE_CLUSTER_NAME=" + string(benchCluster),
		"ATE_WORKFLOW_TASK_POLLER_BEHAVIOR=" + cfg.pollerBehavior,
	}
}

// startProduct starts the worker and the starter and waits until both
// answer their readiness probe.
func startProduct(ctx context.Context, wenv, senv []string, bins map[string]string, logDir string, n int) (wp, sp *process, err error) {
	if wp, err = startProcess("worker", bins["worker"], logDir, wenv); err != nil {
		return nil, nil, err
	}
	if sp, err = startProcess("starter", bins["starter"], logDir, senv); err != nil {
		_ = wp.stop()
		return nil, nil, err
	}
	for _, p := range []*process{wp, sp} {
		if err := p.waitReady(ctx, timeoutFor(2*time.Minute, n)); err != nil {
			return nil, nil, errors.Join(err, sp.stop(), wp.stop())
		}
	}
	return wp, sp, nil
}

// measureBase reads the worker's and the starter's RSS at rest before any
// pool exists: both ready, the API server and the worker quiet. It is the
// base the RSS per pool is counted from: what the processes hold with
// no pool (code, runtime, clients, empty caches).
func measureBase(ctx context.Context, cfg config, s *stack, bins map[string]string, logDir string, r *result) (err error) {
	env := productEnv(cfg, s)
	wp, sp, err := startProduct(ctx, env, env, bins, logDir, 0)
	if err != nil {
		return fmt.Errorf("the product with no pools: %w", err)
	}
	defer func() { err = errors.Join(err, sp.stop(), wp.stop()) }()
	if _, err := quiesce(ctx, s, time.Now(), wp); err != nil {
		return err
	}
	if r.WorkerBaseRSSMiB, err = memoryMiB(wp.pid(), "VmRSS"); err != nil {
		return err
	}
	r.StarterBaseRSSMiB, err = memoryMiB(sp.pid(), "VmRSS")
	return err
}

// runProduct runs the product's worker and starter over the n pools, all
// on the old default, and measures into r: the switch to a new default,
// the release of the old one, a restart of the starter, the
// create-and-delete flow, with -rollout the staged rollouts and, with
// -pod-replicas, the pods. It stops them before it returns.
func runProduct(ctx context.Context, cfg config, s *stack, w *watcher, bins map[string]string, logDir string, n int, r *result, log *slog.Logger) (err error) {
	env := productEnv(cfg, s)
	// With -profile, each process serves pprof on an address of its own.
	wenv, senv, pprofAddrs := env, env, map[string]string{}
	for name, e := range map[string]*[]string{"worker": &wenv, "starter": &senv} {
		if profiling.dir != "" {
			addr, err := servers.FreeAddr("127.0.0.1")
			if err != nil {
				return err
			}
			pprofAddrs[name], *e = addr, append(slices.Clip(env), "PPROF_BIND_ADDRESS="+addr)
		}
	}
	warmStart := time.Now()
	wp, sp, err := startProduct(ctx, wenv, senv, bins, logDir, n)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := errors.Join(sp.stop(), wp.stop()); stopErr != nil {
			log.Warn("stopping the product", "error", stopErr)
		}
	}()

	// Up: both ready, every pool still on the old default (the API floor
	// put it there and the bench provisioned its Deployment: the starter
	// has nothing to start), the API server and the worker quiet.
	if err := until(ctx, timeoutFor(2*time.Minute, n), "every pool on "+oldDefault+", resolved and served", func() (bool, string) {
		warm := w.warmCount()
		return warm == n, fmt.Sprintf("%d of %d", warm, n)
	}); err != nil {
		return err
	}
	// The pools were provisioned before the product started, so the watch
	// above says nothing about the product: wait for its first pass over
	// every pool (the keeper's and the switch starter's reconciles), which
	// at 10,000 pools outlasts a quiet second and would otherwise run into
	// the wave.
	if err := until(ctx, timeoutFor(2*time.Minute, n), "the worker's and the starter's first pass over every pool", func() (bool, string) {
		keeper, err := reconciles(ctx, wp, "pool-keeper")
		if err != nil {
			return false, err.Error()
		}
		starter, err := reconciles(ctx, sp, "switch-starter")
		if err != nil {
			return false, err.Error()
		}
		return keeper >= float64(n) && starter >= float64(n), fmt.Sprintf("pool keeper %.0f, switch starter %.0f of %d", keeper, starter, n)
	}); err != nil {
		return err
	}
	if _, err := quiesce(ctx, s, time.Now(), wp); err != nil {
		return err
	}
	r.ProductWarmSeconds = secs(time.Since(warmStart))
	// At rest with the pools present, before any wave has run.
	if r.WorkerRestRSSMiB, err = memoryMiB(wp.pid(), "VmRSS"); err != nil {
		return err
	}
	if r.StarterRestRSSMiB, err = memoryMiB(sp.pid(), "VmRSS"); err != nil {
		return err
	}
	r.restPerPool()
	log.Info("RSS at rest", "workerMiB", round(r.WorkerRestRSSMiB, 1), "workerBaseMiB", round(r.WorkerBaseRSSMiB, 1), "workerKBPerPool", r.WorkerKBPerPool,
		"starterMiB", round(r.StarterRestRSSMiB, 1), "starterBaseMiB", round(r.StarterBaseRSSMiB, 1), "starterKBPerPool", r.StarterKBPerPool)
	log.Info("product up; every pool on the old default", "warmUpSeconds", r.ProductWarmSeconds)

	// 3. A new class default.
	sample := productSample(n, min(historySamples, n))
	before, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return err
	}
	sampler := sampleConcurrency(ctx, wp)
	backlog := sampleTaskQueue(ctx, s.tc, s.temporal.Namespace(), benchCluster.DefaultTaskQueue(), wp)
	start := time.Now()
	profiled := profileWave(ctx, s, n, "product", pprofAddrs)
	if err := s.kc.Create(ctx, gvisorDefault(newDefault)); err != nil {
		return fmt.Errorf("creating class default %s: %w", newDefault, err)
	}
	times, err := w.awaitWave(ctx, newDefault, n, start, timeoutFor(15*time.Minute, n))
	r.TaskQueue = backlog()
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	r.waveTimes = times
	log.Info("switched", "seconds", r.Seconds, "statusSeconds", r.StatusSeconds, "eventsSeconds", r.EventsSeconds,
		"halfSeconds", r.HalfSeconds, "p90Seconds", r.P90Seconds, "maxWorkflowTaskBacklog", r.TaskQueue.MaxBacklog,
		"maxBacklogAgeSeconds", r.TaskQueue.MaxBacklogAgeSeconds, "minPollers", r.TaskQueue.MinPollers)
	settled, err := quiesce(ctx, s, start, wp)
	if err != nil {
		return err
	}
	r.SwitchSettleSeconds = secs(settled.Sub(start))
	r.ActivityConcurrency = sampler()
	mid, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return err
	}
	// At rest after the wave.
	if r.WorkerRSSMiB, err = memoryMiB(wp.pid(), "VmRSS"); err != nil {
		return err
	}
	if r.StarterRSSMiB, err = memoryMiB(sp.pid(), "VmRSS"); err != nil {
		return err
	}

	// 4. Delete the old default.
	release := time.Now()
	if err := s.kc.Delete(ctx, gvisorDefault(oldDefault)); err != nil {
		return fmt.Errorf("deleting %s: %w", oldDefault, err)
	}
	goneAt, err := w.awaitGone(ctx, oldDefault, timeoutFor(10*time.Minute, n))
	if err != nil {
		return err
	}
	r.ReleaseSeconds = secs(goneAt.Sub(release))
	log.Info("released", "seconds", r.ReleaseSeconds)
	if settled, err = quiesce(ctx, s, release, wp); err != nil {
		return err
	}
	r.ReleaseSettleSeconds = secs(settled.Sub(release))
	after, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return err
	}
	r.fillCosts(before, mid, after)
	r.EventsRecorded = w.eventsTo(newDefault)
	r.fail("the wave to "+newDefault, w.check(newDefault, oldDefault, n), log)
	if r.History, err = measureShape(ctx, s.tc, sample, before.at, mid.at, after.at); err != nil {
		return fmt.Errorf("product executions: %w", err)
	}
	r.HistoryEventsPerSwitch = r.History.EventsPerSwitch
	r.StateTransitionsPerSwitch = r.History.StateTransitions
	log.Info("costs", "stateTransitionsPerSwitch", r.StateTransitionsPerSwitch, "writesPerSwitch", r.WritesPerSwitch, "readsPerSwitch", r.ReadsPerSwitch,
		"historyEventsPerSwitch", r.HistoryEventsPerSwitch, "workerRSSMiB", round(r.WorkerRSSMiB, 1), "cpu", formatCPU(r.SwitchCPUSeconds),
		"wftScheduleToStartMs", r.WFTaskScheduleToStart, "activityScheduleToStartMs", r.ActivityScheduleToStart)

	// 5. Restart the starter over the up-to-date pools.
	starterPeak, err := memoryMiB(sp.pid(), "VmHWM")
	if err != nil {
		return err
	}
	r.Restart, sp, err = restartStarter(ctx, s, sp, bins["starter"], logDir, env, n, log)
	if err != nil {
		if sp == nil {
			sp = &process{} // stopped: nothing left to stop
		}
		return fmt.Errorf("restarting the starter: %w", err)
	}
	r.RestartSeconds, r.RestartStateTransitionsPerPool = r.Restart.Seconds, r.Restart.StateTransitionsPerPool
	newPeak, err := memoryMiB(sp.pid(), "VmHWM")
	if err != nil {
		return err
	}
	workerPeak, err := memoryMiB(wp.pid(), "VmHWM")
	if err != nil {
		return err
	}
	r.WorkerPeakRSSMiB, r.StarterPeakRSSMiB = round(workerPeak, 1), round(max(starterPeak, newPeak), 1)
	r.RSSMiB = round(r.WorkerPeakRSSMiB+r.StarterPeakRSSMiB, 1)
	r.WorkerRSSMiB, r.StarterRSSMiB = round(r.WorkerRSSMiB, 1), round(r.StarterRSSMiB, 1)

	if r.Roll, err = measureRoll(ctx, s, w, wp, n, r, log); err != nil {
		return fmt.Errorf("create-and-delete: %w", err)
	}

	// The staged rollouts of the same pools, as the wave was measured: no
	// pods (they come after), the product quiet.
	if cfg.rollout {
		if err := measureRollouts(ctx, cfg, s, w, wp, sp, n, r, log); err != nil {
			return fmt.Errorf("staged rollouts: %w", err)
		}
	}

	if cfg.podReplicas > 0 {
		if r.Pods, err = measurePods(ctx, cfg, s, w, wp, sp, n, r, log); err != nil {
			return fmt.Errorf("pods: %w", err)
		}
	}
	return nil
}

// rollDefault is the class default the create-and-delete flow creates,
// deleting newDefault at the same time.
const rollDefault = "gvisor-default-rolled"

// measureRoll runs the create-and-delete flow: rollDefault is created as
// the class default and newDefault, the current one, deleted right after,
// as an operator rolls a default. It times the wave, then how long after
// the last pool's move newDefault is gone, and counts the signals its
// release workflow received (every run), then checks the wave.
func measureRoll(ctx context.Context, s *stack, w *watcher, wp *process, n int, r *result, log *slog.Logger) (*rollRun, error) {
	roll := &rollRun{Config: rollDefault, Old: newDefault}
	start := time.Now()
	if err := s.kc.Create(ctx, gvisorDefault(rollDefault)); err != nil {
		return nil, fmt.Errorf("creating class default %s: %w", rollDefault, err)
	}
	if err := s.kc.Delete(ctx, gvisorDefault(newDefault)); err != nil {
		return nil, fmt.Errorf("deleting %s: %w", newDefault, err)
	}
	times, err := w.awaitWave(ctx, rollDefault, n, start, timeoutFor(15*time.Minute, n))
	if err != nil {
		return nil, err
	}
	roll.Seconds = times.Seconds
	goneAt, err := w.awaitGone(ctx, newDefault, timeoutFor(10*time.Minute, n))
	if err != nil {
		return nil, err
	}
	lastMove, _ := w.at(rollDefault, 1)
	roll.ReleaseAfterLastMoveSeconds = secs(goneAt.Sub(lastMove))
	id := benchCluster.ReleaseWorkflowID(newDefault)
	if roll.ReleaseSignals, roll.ReleaseRuns, err = signalsOfAllRuns(ctx, s, id); err != nil {
		return nil, err
	}
	if _, err := quiesce(ctx, s, start, wp); err != nil {
		return nil, err
	}
	r.fail("the create-and-delete wave to "+rollDefault, w.check(rollDefault, newDefault, n), log)
	log.Info("create-and-delete", "seconds", roll.Seconds, "releaseAfterLastMoveSeconds", roll.ReleaseAfterLastMoveSeconds,
		"releaseSignals", roll.ReleaseSignals, "releaseRuns", roll.ReleaseRuns)
	return roll, nil
}

// fail records what a correctness check of what found wrong.
func (r *result) fail(what string, problems []string, log *slog.Logger) {
	for _, p := range problems {
		log.Error("correctness check failed", "after", what, "problem", p)
		r.Failures = append(r.Failures, what+": "+p)
	}
}

// productSample is the WorkerPool search attribute values of k pools
// spread over the n.
func productSample(n, k int) []string {
	var out []string
	for j := range k {
		out = append(out, wfapi.PoolKey(namespaceName(j*n/k), poolName(j*n/k)))
	}
	return out
}

// concurrency is how many activities the product's worker ran at once
// during the switch, sampled every half second.
type concurrency struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

func sampleConcurrency(ctx context.Context, wp *process) func() concurrency {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan concurrency, 1)
	go func() {
		var sum, peak float64
		samples := 0
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				c := concurrency{Max: peak}
				if samples > 0 {
					c.Mean = round(sum/float64(samples), 1)
				}
				done <- c
				return
			case <-t.C:
			}
			m, err := processMetrics(ctx, wp.metricsAddr, "worker_type")
			if err != nil {
				continue
			}
			used := m["temporal_worker_task_slots_used|worker_type=ActivityWorker"] + m["temporal_worker_task_slots_used|worker_type=LocalActivityWorker"]
			sum, peak, samples = sum+used, max(peak, used), samples+1
		}
	}()
	return func() concurrency { cancel(); return <-done }
}

// reconciles is how many reconciles a process's controller has finished.
func reconciles(ctx context.Context, p *process, controller string) (float64, error) {
	m, err := processMetrics(ctx, p.metricsAddr, "controller")
	if err != nil {
		return 0, fmt.Errorf("%s metrics: %w", controller, err)
	}
	// processMetrics sums the series over the labels it does not keep.
	return m["controller_runtime_reconcile_total|controller="+controller], nil
}
