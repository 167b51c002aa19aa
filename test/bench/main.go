// Command bench measures how fast pools follow a new class default, on the
// local real stack (`make bench`). For each size N, on fresh servers, it
// measures the API and Temporal floors, the product's switch, release,
// starter restart, create-and-delete flow and staged rollouts
// (-rollout), and the plain reconciler
// (package baseline), with their costs (requests, state transitions,
// history events, CPU, RSS), and checks every wave for correctness (a
// failed check fails the run). BENCHMARKS.md ("What it measures, and
// how") describes each step; runSize runs them in order.
//
// It prints a table, writes test/bench/results/latest.json and, with -record,
// adds a dated row per size to BENCHMARKS.md. Ctrl-C stops everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"ate.dev/orchestrator/internal/localstack"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/options"
)

type config struct {
	sizes          []int
	out            string
	record         string
	keep           bool
	note           string
	floorTries     int
	temporal       localstack.Flavour
	plainMCR       []int
	cluster        bool
	repeat         int
	pollerBehavior string
	podReplicas    int
	eager          bool
	rollout        bool
}

// The API floor writes this many pools at once (the API server saturates
// from 8); the costs are read from this many pools' executions per size.
const (
	apiConcurrency = 16
	historySamples = 20
)

func main() {
	var cfg config
	var sizes, plainList, temporal string
	flag.StringVar(&sizes, "sizes", "10,100,1000", "comma-separated pool counts, one stack each")
	flag.StringVar(&cfg.out, "out", "test/bench/results/latest.json", "JSON results file (empty: none)")
	flag.StringVar(&cfg.record, "record", "", "add a dated row per size to this markdown file's run table (e.g. BENCHMARKS.md)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep each run's directory (server state and logs)")
	flag.BoolVar(&cfg.cluster, "cluster", false, "run the local cluster (controller manager, scheduler, kwok's 6 nodes: docs/local-cluster.md) under the product, so its Deployments get pods; its rows are noted as such")
	flag.StringVar(&cfg.note, "note", "", "a note for the recorded rows")
	flag.IntVar(&cfg.floorTries, "floor-tries", 2, "runs of the Temporal floor per size; the best one is the floor")
	flag.StringVar(&temporal, "temporal", "dev", `Temporal server: "dev" (the CLI's dev server, as make dev runs it) or "postgres" (temporal-server on PostgreSQL with SQL visibility and 4 history shards, at its defaults; its rows are noted as such)`)
	flag.StringVar(&cfg.pollerBehavior, "poller-behavior", options.DefaultWorkflowTaskPollerBehavior, `the workflow task poller behaviour of the product's worker and the floor's: "autoscaling" (the product's default) or "fixed" (docs/decisions/0006-wave-stall.md)`)
	flag.IntVar(&cfg.podReplicas, "pod-replicas", 0, "with -cluster: after the release and the restart, scale every pool to this many workers (on enough simulated gVisor nodes) and measure their pods coming up, then a wave with them present (pods.go)")
	flag.BoolVar(&cfg.eager, "eager", false, "also time the Temporal floor with its switches started by eager workflow start, on the floor worker's own client (as many tries as -floor-tries)")
	flag.BoolVar(&cfg.rollout, "rollout", true, "after the create-and-delete flow, measure two staged rollouts of the same pools (steps 1%, 10%, 100%; the second with a 60 s bake after step 1: rollout.go); false skips them, for quick runs")
	flag.StringVar(&profiling.dir, "profile", "", "write CPU profiles of kube-apiserver, the worker and the starter, taken during each wave, to this directory (profile.go)")
	flag.IntVar(&profiling.seconds, "profile-seconds", 15, "with -profile: how long each wave's profiles run from the new default's creation")
	flag.IntVar(&cfg.repeat, "repeat", 1, "measure each size this many times, each on fresh servers; every repeat is recorded, and the slowest over the fastest printed")
	flag.StringVar(&plainList, "plain-reconciler", "16,1", "MaxConcurrentReconciles of the plain reconciler's waves, one new default each (empty: none)")
	flag.Parse()
	cfg.floorTries = max(cfg.floorTries, 1)
	if cfg.podReplicas < 0 || (cfg.podReplicas > 0 && !cfg.cluster) {
		fail("-pod-replicas needs -cluster and a positive count")
	}
	if cfg.repeat < 1 {
		fail("-repeat: %d is not a positive number", cfg.repeat)
	}
	var err error
	if cfg.temporal, err = localstack.ParseFlavour(temporal); err != nil {
		fail("-temporal: %v", err)
	}
	if cfg.sizes, err = positiveInts(sizes); err != nil {
		fail("-sizes: %v", err)
	}
	if plainList != "" {
		if cfg.plainMCR, err = positiveInts(plainList); err != nil {
			fail("-plain-reconciler: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, cfg, log)
	stop()
	if err != nil {
		log.Error("bench failed", "error", err)
		os.Exit(1)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}

func positiveInts(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	root, err := servers.RepoRoot()
	if err != nil {
		return err
	}
	top, err := os.MkdirTemp("", "ate-bench-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(top)
	}
	log.Info("building the worker and the starter")
	bins, err := buildProduct(ctx, root, filepath.Join(top, "bin"))
	if err != nil {
		return err
	}
	commit := gitCommit(root)
	started := time.Now().UTC()
	var results []*result
	for i, n := range cfg.sizes {
		var repeats []*result
		for rep := 1; rep <= cfg.repeat; rep++ {
			// A directory per measurement: each runs on fresh servers, also
			// when a size is listed twice.
			dir := filepath.Join(top, fmt.Sprintf("%02d-n%d-r%d", i, n, rep))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			began := time.Now()
			r, err := runSize(ctx, cfg, root, dir, bins, n, log.With("repeat", fmt.Sprintf("%d/%d", rep, cfg.repeat)))
			if err != nil {
				if cfg.keep {
					err = fmt.Errorf("%w (state and logs kept in %s)", err, dir)
				}
				return fmt.Errorf("N=%d (repeat %d of %d): %w", n, rep, cfg.repeat, err)
			}
			r.Commit, r.Date, r.RunSeconds = commit, started.Format(time.RFC3339), secs(time.Since(began))
			r.Repeat, r.Repeats = rep, cfg.repeat
			log.Info("size done", "N", n, "repeat", rep, "runSeconds", r.RunSeconds)
			repeats = append(repeats, r)
			results = append(results, r)
			printTable(os.Stdout, results)
		}
		if len(repeats) > 1 {
			fastest, slowest := spreadOf(repeats)
			log.Info("repeats of one size", "N", n, "repeats", len(repeats), "fastestSeconds", fastest, "slowestSeconds", slowest,
				"slowestOverFastest", round(slowest/fastest, 2))
		}
	}
	log.Info("bench done", "seconds", secs(time.Since(started)))
	run := judgeRun(results)
	results[len(results)-1].RunTargets = run
	printTargets(os.Stdout, results, run)
	if cfg.out != "" {
		if err := writeResults(root, cfg.out, results); err != nil {
			return err
		}
	}
	if cfg.record != "" {
		path := cfg.record
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		note := cfg.note
		if cfg.temporal == localstack.TemporalPostgres {
			note = strings.TrimSpace(postgresNote + " " + note)
		}
		if cfg.cluster {
			note = strings.TrimSpace(clusterNote + " " + note)
		}
		if err := recordRuns(path, results, note); err != nil {
			return err
		}
		log.Info("recorded the runs in " + path)
	}
	failed := 0
	for _, r := range results {
		failed += len(r.Failures)
	}
	if failed > 0 {
		return fmt.Errorf("the correctness checks found %d problems (FAILED lines above; failures in the JSON)", failed)
	}
	return nil
}

// runSize measures one size on a stack of its own.
func runSize(ctx context.Context, cfg config, root, dir string, bins map[string]string, n int, log *slog.Logger) (_ *result, err error) {
	log = log.With("N", n)
	r := &result{Pools: n, Load1: loadAverage(), PollerBehavior: cfg.pollerBehavior}
	// The floor's worker runs with the product's worker options, as the
	// bench starts the product's worker.
	var workerOpts worker.Options
	defaults := options.DefaultWorkerOptions()
	defaults.WorkflowTaskPollerBehavior = cfg.pollerBehavior
	if err := defaults.Validate(); err != nil {
		return nil, fmt.Errorf("-poller-behavior: %w", err)
	}
	defaults.Apply(&workerOpts)
	s, err := startStack(ctx, cfg, root, dir, n, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := s.stop(); stopErr != nil {
			log.Warn("stopping the servers", "error", stopErr)
		}
	}()

	// The product's RSS with no pool: the base of its RSS per pool.
	if err := measureBase(ctx, cfg, s, bins, filepath.Join(dir, "logs"), r); err != nil {
		return nil, err
	}
	if err := populate(ctx, s.kc, n); err != nil {
		return nil, fmt.Errorf("creating %d pools: %w", n, err)
	}

	// 1. The API floor.
	conc := min(n, apiConcurrency)
	d, writes, err := apiFloor(ctx, s.kc, conc)
	if err != nil {
		return nil, err
	}
	r.APIFloorSeconds, r.APIFloorWrites, r.APIFloorConcurrency = secs(d), writes, conc
	log.Info("API floor", "seconds", r.APIFloorSeconds, "writes", writes, "writesPerSecond", round(float64(writes)/d.Seconds(), 0), "concurrency", conc)
	if err := provision(ctx, s.kc, s.cs); err != nil {
		return nil, err
	}

	// 2. The Temporal floors.
	if err := runFloors(ctx, s, n, workerOpts, cfg, r, log); err != nil {
		return nil, err
	}

	// 3-5. The product: the switch, the release, the starter's restart.
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching() // before the servers stop: open watches delay the API server's shutdown
	w, err := startWatcher(wctx, s.rest)
	if err != nil {
		return nil, err
	}
	if err := runProduct(ctx, cfg, s, w, bins, filepath.Join(dir, "logs"), n, r, log); err != nil {
		return nil, err
	}

	// 6. The plain reconciler, the product stopped.
	for i, mcr := range cfg.plainMCR {
		p, err := runPlain(ctx, s, w, n, mcr, fmt.Sprintf("gvisor-default-v%d", 3+i), log)
		if err != nil {
			return nil, err
		}
		r.PlainReconciler = append(r.PlainReconciler, p)
	}
	r.finish()
	return r, nil
}

// snap is the counters at one moment.
type snap struct {
	at      time.Time
	api     reqCounts
	own     reqCounts
	worker  map[string]float64
	starter map[string]float64
	cpu     cpuSnapshot
}

func snapshot(ctx context.Context, s *stack, wp, sp *process) (*snap, error) {
	out := &snap{at: time.Now(), own: s.own.snapshot(), cpu: takeCPU()}
	var err error
	if out.api, err = scrapeAPIServer(ctx, s.metrics); err != nil {
		return nil, err
	}
	if out.worker, err = processMetrics(ctx, wp.metricsAddr, "activity_type", "workflow_type", "outcome"); err != nil {
		return nil, fmt.Errorf("worker metrics: %w", err)
	}
	if out.starter, err = processMetrics(ctx, sp.metricsAddr, "kind"); err != nil {
		return nil, fmt.Errorf("starter metrics: %w", err)
	}
	return out, nil
}

// productRequests is what the API server served in a window, minus the
// bench's own requests.
func productRequests(a, b *snap) reqCounts {
	return a.api.sub(b.api).sub(a.own.sub(b.own))
}

// workerBusy sums the worker's counters of Temporal work done: workflow
// tasks, activities and local activities.
func workerBusy(ctx context.Context, wp *process) (float64, error) {
	m, err := processMetrics(ctx, wp.metricsAddr)
	if err != nil {
		return 0, fmt.Errorf("worker metrics: %w", err)
	}
	// The pool keeper's reconciles too: a worker still going through its
	// first pass is not at rest.
	return m["temporal_workflow_task_execution_latency_seconds_count"] +
		m["temporal_activity_execution_latency_seconds_count"] +
		m["temporal_local_activity_execution_latency_seconds_count"] +
		m["controller_runtime_reconcile_total"], nil
}

// quiesce waits until the API server has served no request on the
// product's resources (watches aside) for 1.5 s, and the worker, if given,
// has run no workflow task or activity in that time, and returns when the
// last one was seen.
func quiesce(ctx context.Context, s *stack, since time.Time, wp *process) (time.Time, error) {
	return quiesceOn(ctx, s, since, wp, func(res string) bool { return productResources[res] })
}

// quiesceOn is quiesce over the resources product says are the product's.
func quiesceOn(ctx context.Context, s *stack, since time.Time, wp *process, product func(resource string) bool) (time.Time, error) {
	last := [2]float64{-1, -1}
	lastChange, stable := since, 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := scrapeAPIServer(ctx, s.metrics)
		if err != nil {
			return false, err
		}
		own := s.own.snapshot()
		var cur [2]float64
		for k, v := range c.sub(own) {
			if product(k.Resource) && k.Verb != "WATCH" {
				cur[0] += v
			}
		}
		if wp != nil {
			if cur[1], err = workerBusy(ctx, wp); err != nil {
				return false, err
			}
		}
		if cur != last {
			last, stable, lastChange = cur, 0, time.Now()
			return false, nil
		}
		stable++
		return stable >= 3, nil
	})
	if lastChange.Before(since) {
		lastChange = since
	}
	return lastChange, err
}

// timeoutFor is a timeout d for 1000 pools, scaled to n (never less than d):
// at 10,000 pools a wave or a settling takes about ten times as long.
func timeoutFor(d time.Duration, n int) time.Duration {
	return d * time.Duration(max(1, (n+999)/1000))
}

func secs(d time.Duration) float64 { return round(d.Seconds(), 2) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	load1, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(load1, 64)
	return v
}

func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	// Uncommitted changes to what the bench measures (not to other files,
	// nor to the results the last run wrote).
	diff := exec.Command("git", "-C", root, "diff", "--quiet", "HEAD", "--", "workflows", "activities", "internal", "worker", "starter", "test/bench", "go.mod",
		":(exclude)test/bench/results")
	if diff.Run() != nil {
		commit += "+dirty"
	}
	return commit
}
