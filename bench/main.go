// Command bench measures how fast pools follow a new class default, on the
// local real stack (`make bench`). For each size N it starts a Temporal dev
// server (SQLite file, WAL, synchronous=normal) and etcd+kube-apiserver in a
// temporary directory, creates N unpinned pools over 10 namespaces, and
// measures, in order:
//
//  1. the API floor: the least writes a switch of N pools needs, made with a
//     plain client (which also puts the pools on the old default);
//  2. the Temporal floor: N workflows of the product's shape per switch with
//     no-op activities, on the same server, in this process;
//  3. the product (./worker and ./starter as subprocesses): a new class
//     default is created; time until every pool names it (Resolved True, no
//     pending claim) and has its SandboxConfigSwitched event;
//  4. the release: the old default is deleted; time until it is gone;
//  5. costs, counted: API requests (the API server's apiserver_request_total
//     before and after, minus the bench's own requests), history events and
//     activities per switch (sampled histories), peak RSS of the worker and
//     the starter (VmHWM), CPU per process.
//
// It prints a table, writes bench/results/latest.json and, with -record,
// adds a dated row per size to BENCHMARKS.md. Ctrl-C stops everything.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/testenv/servers"
	"ate.dev/orchestrator/internal/wfapi"
)

type config struct {
	sizes          []int
	out            string
	record         string
	keep           bool
	tuned          bool
	shapes         []shape
	apiConcurrency int
	samples        int
	workerMain     string
	starterMain    string
	workerOptions  string
	dynamicConfig  string
	note           string
	floorOnly      bool
	reps           int
	floorTries     int
	temporalBinary string
	pragmas        string
}

func main() {
	var cfg config
	var sizes string
	flag.StringVar(&sizes, "sizes", "10,100,1000", "comma-separated pool counts, one stack each")
	flag.StringVar(&cfg.out, "out", "bench/results/latest.json", "JSON results file (empty: none)")
	flag.StringVar(&cfg.record, "record", "", "add a dated row per size to this markdown file's run table (e.g. BENCHMARKS.md)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep each run's directory (server state and logs)")
	flag.BoolVar(&cfg.tuned, "tuned-server", true, "run the dev server with the measured dynamic config levers (false: only make dev's pragmas)")
	var shapeList string
	flag.StringVar(&shapeList, "shapes", "product", "workflow shapes to time with no-op activities: product (the Temporal floor), merged, local (the leaner shapes BENCHMARKS.md proposes)")
	flag.IntVar(&cfg.apiConcurrency, "api-concurrency", 16, "pools the API floor writes at once (the API server saturates from 8; the product runs many more activities at once, see activity_concurrency)")
	flag.IntVar(&cfg.samples, "history-samples", 20, "pools whose histories are read per size")
	flag.StringVar(&cfg.workerMain, "worker-main", "", "package of the worker binary (default ./worker, or ./bench/worker with -worker-options)")
	flag.StringVar(&cfg.workerOptions, "worker-options", "", `Temporal worker options as JSON, e.g. {"MaxConcurrentWorkflowTaskPollers":8}, for the product's worker (built from ./bench/worker) and the floor's`)
	flag.StringVar(&cfg.dynamicConfig, "dynamic-config", "", "extra dev server dynamic config, key=value[,key=value...] (values are JSON)")
	flag.StringVar(&cfg.starterMain, "starter-main", "./starter", "package of the starter binary")
	flag.StringVar(&cfg.note, "note", "", "a note for the recorded rows")
	flag.BoolVar(&cfg.floorOnly, "floor-only", false, "only time the -shapes, -reps times per size, to compare server and worker settings")
	flag.IntVar(&cfg.reps, "reps", 3, "repetitions with -floor-only")
	flag.IntVar(&cfg.floorTries, "floor-tries", 2, "runs of the Temporal floor per size; the best one is the floor")
	flag.StringVar(&cfg.pragmas, "sqlite-pragmas", "", "extra SQLite pragmas of the dev server, name=value[,name=value...]")
	flag.StringVar(&cfg.temporalBinary, "temporal-binary", "", "the temporal CLI to run the dev server from (default bin/temporal; an unstripped build helps perf)")
	flag.Parse()
	cfg.floorTries = max(cfg.floorTries, 1)
	for _, sh := range strings.Split(shapeList, ",") {
		if !slices.Contains(shapes, shape(sh)) {
			fmt.Fprintf(os.Stderr, "bench: unknown shape %q (want %v)\n", sh, shapes)
			os.Exit(2)
		}
		cfg.shapes = append(cfg.shapes, shape(sh))
	}
	if cfg.workerMain == "" {
		cfg.workerMain = "./worker"
		if cfg.workerOptions != "" {
			cfg.workerMain = "./bench/worker"
		}
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: bad size %q\n", s)
			os.Exit(2)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, cfg, log)
	stop()
	if err != nil {
		log.Error("bench failed", "error", err)
		os.Exit(1)
	}
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
	log.Info("building the worker and the starter", "worker", cfg.workerMain, "starter", cfg.starterMain)
	bins, err := buildProduct(ctx, root, filepath.Join(top, "bin"), map[string]string{"worker": cfg.workerMain, "starter": cfg.starterMain})
	if err != nil {
		return err
	}
	commit := gitCommit(root)
	started := time.Now().UTC()
	var results []*result
	for _, n := range cfg.sizes {
		dir := filepath.Join(top, fmt.Sprintf("n%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		began := time.Now()
		r, err := runSize(ctx, cfg, root, dir, bins, n, log)
		if err != nil {
			if cfg.keep {
				err = fmt.Errorf("%w (state and logs kept in %s)", err, dir)
			}
			return fmt.Errorf("N=%d: %w", n, err)
		}
		r.Commit, r.Date, r.RunSeconds = commit, started.Format(time.RFC3339), secs(time.Since(began))
		log.Info("size done", "N", n, "runSeconds", r.RunSeconds)
		if cfg.floorOnly {
			continue
		}
		results = append(results, r)
		printTable(os.Stdout, results)
	}
	if cfg.floorOnly {
		return nil
	}
	if cfg.out != "" {
		out := cfg.out
		if !filepath.IsAbs(out) {
			out = filepath.Join(root, out)
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			return err
		}
		log.Info("wrote " + out)
	}
	if cfg.record != "" {
		path := cfg.record
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := recordRuns(path, results, cfg.note); err != nil {
			return err
		}
		log.Info("recorded the runs in " + path)
	}
	return nil
}

// runSize measures one size on a stack of its own.
func runSize(ctx context.Context, cfg config, root, dir string, bins map[string]string, n int, log *slog.Logger) (_ *result, err error) {
	log = log.With("N", n)
	r := &result{Pools: n, Load1: loadAverage(), TunedServer: cfg.tuned, WorkerOptions: cfg.workerOptions}
	// The floor's worker runs with the product's worker options (its
	// defaults, as the bench starts the product's worker), then -worker-options.
	var workerOpts worker.Options
	defaults := options.DefaultWorkerOptions()
	defaults.Apply(&workerOpts)
	if cfg.workerOptions != "" {
		if err := json.Unmarshal([]byte(cfg.workerOptions), &workerOpts); err != nil {
			return nil, fmt.Errorf("-worker-options: %w", err)
		}
	}
	tuning := defaultTuning(cfg.tuned)
	if cfg.dynamicConfig != "" {
		if tuning.DynamicConfig == nil {
			tuning.DynamicConfig = map[string]string{}
		}
		for _, kv := range strings.Split(cfg.dynamicConfig, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("-dynamic-config: %q is not key=value", kv)
			}
			tuning.DynamicConfig[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if cfg.pragmas != "" {
		tuning.Pragmas = append(tuning.Pragmas, strings.Split(cfg.pragmas, ",")...)
	}
	r.DynamicConfig, r.Pragmas = tuning.DynamicConfig, tuning.Pragmas
	tuning.Binary = cfg.temporalBinary
	s, err := startStack(ctx, root, dir, tuning, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := s.stop(); stopErr != nil {
			log.Warn("stopping the servers", "error", stopErr)
		}
	}()

	if err := populate(ctx, s.kc, n); err != nil {
		return nil, fmt.Errorf("creating %d pools: %w", n, err)
	}

	// 1. The API floor.
	conc := min(n, cfg.apiConcurrency)
	d, writes, err := apiFloor(ctx, s.kc, conc)
	if err != nil {
		return nil, err
	}
	r.APIFloorSeconds, r.APIFloorWrites, r.APIFloorConcurrency = secs(d), writes, conc
	log.Info("API floor", "seconds", r.APIFloorSeconds, "writes", writes, "writesPerSecond", round(float64(writes)/d.Seconds(), 0), "concurrency", conc)
	if err := provision(ctx, s.kc, s.cs); err != nil {
		return nil, err
	}

	if cfg.floorOnly {
		return r, floorReps(ctx, s, n, workerOpts, cfg, log)
	}

	// 2. The Temporal floor, with the product's worker options: the best of
	// cfg.floorTries runs, each on its own workflows.
	var fl *floorRun
	prefix := floorIDPrefix
	for try := range cfg.floorTries {
		p := floorIDPrefix
		if try > 0 {
			p = fmt.Sprintf("%stry%d/", floorIDPrefix, try+1)
		}
		run, err := temporalFloor(ctx, s.tc, n, workerOpts, shapeProduct, p)
		if err != nil {
			return nil, fmt.Errorf("Temporal floor: %w", err)
		}
		log.Info("Temporal floor", "try", try+1, "seconds", round(run.Seconds, 2), "passesDone", round(run.FullSeconds, 2), "warmUp", round(run.WarmSeconds, 1),
			"wftScheduleToStartMs", run.WorkflowTaskScheduleToStartMs, "activityScheduleToStartMs", run.ActivityScheduleToStartMs, "cpu", formatCPU(run.CPU))
		r.TemporalFloorTriesSeconds = append(r.TemporalFloorTriesSeconds, round(run.Seconds, 2))
		if fl == nil || run.Seconds < fl.Seconds {
			fl, prefix = run, p
		}
	}
	r.TemporalFloorSeconds, r.TemporalFloorFullSeconds = round(fl.Seconds, 2), round(fl.FullSeconds, 2)
	r.FloorCPUSeconds, r.FloorActivityScheduleToStart, r.FloorWFTaskScheduleToStart = fl.CPU, fl.ActivityScheduleToStartMs, fl.WorkflowTaskScheduleToStartMs
	if r.FloorHistory, err = measureShape(ctx, s.tc, floorSample(prefix, n, min(5, n)), floorSwitchID, fl.Start, fl.End, time.Time{}); err != nil {
		return nil, fmt.Errorf("floor histories: %w", err)
	}
	r.Shapes = map[shape]*shapeFloor{shapeProduct: {Seconds: r.TemporalFloorSeconds, TemporalCPUSeconds: fl.CPU["temporal"], History: r.FloorHistory}}
	for _, sh := range cfg.shapes {
		if sh == shapeProduct {
			continue
		}
		prefix := "bench-" + string(sh) + "/"
		sf, err := temporalFloor(ctx, s.tc, n, workerOpts, sh, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s shape: %w", sh, err)
		}
		st, err := measureShape(ctx, s.tc, floorSample(prefix, n, min(5, n)), floorSwitchID, sf.Start, sf.End, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("%s shape histories: %w", sh, err)
		}
		r.Shapes[sh] = &shapeFloor{Seconds: round(sf.Seconds, 2), TemporalCPUSeconds: sf.CPU["temporal"], History: st}
		log.Info("shape floor", "shape", sh, "seconds", r.Shapes[sh].Seconds, "eventsPerSwitch", st.EventsPerSwitch, "cpu", formatCPU(sf.CPU))
	}

	// The product.
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching() // before the servers stop: open watches delay the API server's shutdown
	w, err := startWatcher(wctx, s.rest)
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(dir, "logs")
	env := []string{
		"KUBECONFIG=" + s.kubeconfig,
		"TEMPORAL_ADDRESS=" + s.temporal.Address(),
		"TEMPORAL_NAMESPACE=" + s.temporal.Namespace(),
		"TEMPORAL_TASK_QUEUE=" + wfapi.DefaultTaskQueue,
		"ATE_BENCH_WORKER_OPTIONS=" + cfg.workerOptions,
	}
	wp, err := startProcess("worker", bins["worker"], logDir, env)
	if err != nil {
		return nil, err
	}
	defer func() { _ = wp.stop() }()
	sp, err := startProcess("starter", bins["starter"], logDir, env)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sp.stop() }()
	for _, p := range []*process{wp, sp} {
		if err := p.waitReady(ctx, 2*time.Minute); err != nil {
			return nil, err
		}
	}
	warmStart := time.Now()
	if err := waitFirstPasses(ctx, wp, n); err != nil {
		return nil, err
	}
	if warm, _, _, _ := w.counts(); warm != n {
		return nil, fmt.Errorf("after the product's first passes %d of %d pools are on %s, resolved, with their Deployment in status", warm, n, oldDefault)
	}
	if _, err := quiesce(ctx, s, time.Now()); err != nil {
		return nil, err
	}
	r.ProductWarmSeconds = secs(time.Since(warmStart))
	log.Info("product up; every pool on the old default", "warmUpSeconds", r.ProductWarmSeconds)

	before, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}

	// 3. A new class default.
	sampler := sampleConcurrency(ctx, wp)
	start := time.Now()
	if err := s.kc.Create(ctx, gvisorDefault(newDefault)); err != nil {
		return nil, err
	}
	if err := until(ctx, 15*time.Minute, "every pool on the new default with its event", func() (bool, string) {
		_, switched, events, _ := w.counts()
		return switched == n && events == n, fmt.Sprintf("%d switched, %d events of %d", switched, events, n)
	}); err != nil {
		return nil, err
	}
	lastSwitch, lastEvent, _ := w.lastTimes()
	r.StatusSeconds, r.EventsSeconds = secs(lastSwitch.Sub(start)), secs(lastEvent.Sub(start))
	r.Seconds = max(r.StatusSeconds, r.EventsSeconds)
	log.Info("switched", "seconds", r.Seconds, "statusSeconds", r.StatusSeconds, "eventsSeconds", r.EventsSeconds)
	settled, err := quiesce(ctx, s, start)
	if err != nil {
		return nil, err
	}
	r.SwitchSettleSeconds = secs(settled.Sub(start))
	r.ActivityConcurrency = sampler()
	mid, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}

	// 4. Delete the old default.
	release := time.Now()
	if err := s.kc.Delete(ctx, gvisorDefault(oldDefault)); err != nil {
		return nil, err
	}
	if err := until(ctx, 10*time.Minute, "the old default to be gone", func() (bool, string) {
		_, _, _, gone := w.counts()
		return gone, "still there"
	}); err != nil {
		return nil, err
	}
	_, _, goneAt := w.lastTimes()
	r.ReleaseSeconds = secs(goneAt.Sub(release))
	log.Info("released", "seconds", r.ReleaseSeconds)
	settled, err = quiesce(ctx, s, release)
	if err != nil {
		return nil, err
	}
	r.ReleaseSettleSeconds = secs(settled.Sub(release))
	after, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	r.fillCosts(before, mid, after)
	r.EventsRecorded = w.events

	// 5. Histories, memory.
	if r.History, err = measureShape(ctx, s.tc, productSample(n, min(cfg.samples, n)), productSwitchID, before.at, mid.at, after.at); err != nil {
		return nil, fmt.Errorf("product histories: %w", err)
	}
	r.HistoryEventsPerSwitch = r.History.EventsPerSwitch
	r.WorkerRSSMiB, _ = memoryMiB(wp.pid(), "VmHWM")
	r.StarterRSSMiB, _ = memoryMiB(sp.pid(), "VmHWM")
	r.WorkerRSSMiB, r.StarterRSSMiB = round(r.WorkerRSSMiB, 1), round(r.StarterRSSMiB, 1)
	r.RSSMiB = round(r.WorkerRSSMiB+r.StarterRSSMiB, 1)
	r.finish()
	log.Info("costs", "writesPerSwitch", r.WritesPerSwitch, "readsPerSwitch", r.ReadsPerSwitch,
		"historyEventsPerSwitch", r.HistoryEventsPerSwitch, "rssMiB", r.RSSMiB, "cpu", formatCPU(r.SwitchCPUSeconds),
		"wftScheduleToStartMs", r.WFTaskScheduleToStart, "activityScheduleToStartMs", r.ActivityScheduleToStart)
	if err := errors.Join(sp.stop(), wp.stop()); err != nil {
		log.Warn("stopping the product", "error", err)
	}
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

// quiesce waits until the API server has served no request on the
// product's resources (watches aside) for 1.5 s, and returns when the last
// one was seen.
func quiesce(ctx context.Context, s *stack, since time.Time) (time.Time, error) {
	var last float64 = -1
	lastChange, stable := since, 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := scrapeAPIServer(ctx, s.metrics)
		if err != nil {
			return false, err
		}
		own := s.own.snapshot()
		var total float64
		for k, v := range c.sub(own) {
			if productResources[k.Resource] && k.Verb != "WATCH" {
				total += v
			}
		}
		if total != last {
			last, stable, lastChange = total, 0, time.Now()
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

func productSwitchID(parent string) string { return parent + "/switch/1" }
func floorSwitchID(parent string) string   { return parent + "/switch/1" }

// productSample picks k pools spread over the N.
func productSample(n, k int) []string {
	var ids []string
	for j := range k {
		i := j * n / k
		ids = append(ids, wfapi.PoolWorkflowID(namespaceName(i), poolName(i)))
	}
	return ids
}

func floorSample(prefix string, n, k int) []string {
	var ids []string
	for j := range k {
		i := j * n / k
		ids = append(ids, prefix+wfapi.PoolKey(namespaceName(i), poolName(i)))
	}
	return ids
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
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	// Uncommitted changes to what the bench measures (not to other files).
	diff := exec.Command("git", "-C", root, "diff", "--quiet", "HEAD", "--", "workflows", "activities", "internal", "worker", "starter", "bench", "go.mod")
	if diff.Run() != nil {
		commit += "+dirty"
	}
	return commit
}

var _ client.Object = &v1alpha1.WorkerPool{}

// floorReps times the floor shapes again and again on one server, for
// comparing settings with less noise than one run gives.
func floorReps(ctx context.Context, s *stack, n int, opts worker.Options, cfg config, log *slog.Logger) error {
	for rep := range cfg.reps {
		for _, sh := range cfg.shapes {
			prefix := fmt.Sprintf("bench-rep%d-%s/", rep, sh)
			fl, err := temporalFloor(ctx, s.tc, n, opts, sh, prefix)
			if err != nil {
				return err
			}
			st, err := measureShape(ctx, s.tc, floorSample(prefix, n, min(3, n)), floorSwitchID, fl.Start, fl.End, time.Time{})
			if err != nil {
				return err
			}
			log.Info("floor", "rep", rep, "shape", fl.Shape, "seconds", round(fl.Seconds, 2), "perSecond", round(float64(n)/fl.Seconds, 1),
				"passesDone", round(fl.FullSeconds, 2), "eventsPerSwitch", st.EventsPerSwitch, "wftS2S", fl.WorkflowTaskScheduleToStartMs,
				"actS2S", fl.ActivityScheduleToStartMs, "cpu", formatCPU(fl.CPU), "load", loadAverage())
		}
	}
	return nil
}

// waitFirstPasses waits until the product's worker has run n first passes
// (an Observe each: the bench provisioned every pool's Deployment and
// status, so a pass finds nothing to apply or write), then until the API
// server is quiet.
func waitFirstPasses(ctx context.Context, wp *process, n int) error {
	return until(ctx, 15*time.Minute, "every pool workflow's first pass", func() (bool, string) {
		m, err := processMetrics(ctx, wp.metricsAddr, "activity_type")
		if err != nil {
			return false, err.Error()
		}
		observed := m["temporal_local_activity_execution_latency_seconds_count|activity_type=Observe"]
		return observed >= float64(n), fmt.Sprintf("%.0f observed of %d", observed, n)
	})
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
