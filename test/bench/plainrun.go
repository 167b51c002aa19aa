package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/test/bench/baseline"
)

// plainRun is one wave of the plain reconciler.
type plainRun struct {
	MaxConcurrentReconciles int    `json:"max_concurrent_reconciles"`
	Config                  string `json:"config"`
	waveTimes
	// Requests the reconciler made during the wave (the bench's client
	// counts them; the bench's own create of the config left out).
	WritesPerSwitch       float64            `json:"writes_per_switch"`
	ReadsPerSwitch        float64            `json:"reads_per_switch"`
	EventCreatesPerSwitch float64            `json:"event_creates_per_switch"`
	Requests              map[string]float64 `json:"requests"`
	// CPU per process during the wave; KubeCPUMsPerSwitch: kube-apiserver,
	// etcd and the bench (which runs the reconciler, and the watches that
	// time it), per switch.
	CPUSeconds         map[string]float64 `json:"cpu_seconds"`
	KubeCPUMsPerSwitch float64            `json:"kube_cpu_ms_per_switch"`
	Reconciles         int64              `json:"reconciles"`
}

// runPlain moves the n pools to a new class default named config with the
// plain reconciler at mcr concurrent reconciles, timed as the product is:
// from the config's creation until every pool names it with its event. The
// product must be stopped.
func runPlain(ctx context.Context, s *stack, w *watcher, n, mcr int, config string, log *slog.Logger) (_ *plainRun, err error) {
	mgr, err := ctrl.NewManager(s.rest, ctrl.Options{
		Scheme:                 kube.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("plain reconciler's manager: %w", err)
	}
	r := baseline.New(mgr.GetClient(), s.kc)
	if err := r.Setup(mgr, mcr); err != nil {
		return nil, fmt.Errorf("plain reconciler's controller: %w", err)
	}
	mctx, cancel := context.WithCancel(ctx)
	var mgrErr error // read once stopped is closed
	stopped := make(chan struct{})
	go func() {
		mgrErr = mgr.Start(mctx)
		close(stopped)
	}()
	defer func() {
		cancel()
		<-stopped
		if err == nil && mgrErr != nil {
			err = fmt.Errorf("plain reconciler's manager: %w", mgrErr)
		}
	}()
	running := func() error {
		select {
		case <-stopped:
			return fmt.Errorf("plain reconciler's manager stopped: %w", mgrErr)
		default:
			return nil
		}
	}

	// The initial list reconciles every pool once (each finds its pool up
	// to date); the clock starts when that is over.
	if err := settleCount(ctx, timeoutFor(5*time.Minute, n), "the plain reconciler's initial reconciles", int64(n), r.Reconciles, running); err != nil {
		return nil, err
	}

	run := &plainRun{MaxConcurrentReconciles: mcr, Config: config}
	own, cpu, reconciles := s.own.snapshot(), takeCPU(), r.Reconciles()
	start := time.Now()
	profiled := profileWave(ctx, s, n, fmt.Sprintf("plain%d", mcr), nil)
	if err := s.kc.Create(ctx, gvisorDefault(config)); err != nil {
		return nil, fmt.Errorf("creating class default %s: %w", config, err)
	}
	times, err := w.awaitWave(ctx, config, n, start, timeoutFor(15*time.Minute, n))
	if err != nil {
		return nil, fmt.Errorf("plain reconciler (%d at once): %w", mcr, err)
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	if err := running(); err != nil {
		return nil, err
	}
	run.waveTimes = times
	run.CPUSeconds = takeCPU().since(cpu)
	run.Reconciles = r.Reconciles() - reconciles
	reqs := s.own.snapshot().sub(own)
	// Less the bench's own create of the config.
	if created := (reqKey{Verb: "POST", Resource: "sandboxconfigs.ate.dev"}); reqs[created] <= 1 {
		delete(reqs, created)
	} else {
		reqs[created]--
	}
	sum := summarize(reqs)
	run.WritesPerSwitch = round(sum.Writes/float64(n), 2)
	run.ReadsPerSwitch = round(sum.Reads/float64(n), 2)
	run.EventCreatesPerSwitch = round(sum.EventCreates/float64(n), 2)
	run.Requests = sum.ByVerbResource
	run.KubeCPUMsPerSwitch = round(1000*(run.CPUSeconds["kube-apiserver"]+run.CPUSeconds["etcd"]+run.CPUSeconds["bench"])/float64(n), 1)
	log.Info("plain reconciler", "maxConcurrentReconciles", mcr, "seconds", run.Seconds, "writesPerSwitch", run.WritesPerSwitch,
		"readsPerSwitch", run.ReadsPerSwitch, "kubeCPUMsPerSwitch", run.KubeCPUMsPerSwitch, "cpu", formatCPU(run.CPUSeconds))
	return run, nil
}

// settleCount waits until get() has reached at least want and then not
// moved for a second (polled every 100 ms), and fails as soon as check
// does.
func settleCount(ctx context.Context, timeout time.Duration, what string, want int64, get func() int64, check func() error) error {
	last, lastChange := int64(-1), time.Now()
	var checkErr error
	err := untilEvery(ctx, 100*time.Millisecond, timeout, what, func() (bool, string) {
		if checkErr = check(); checkErr != nil {
			return true, ""
		}
		v := get()
		if v != last {
			last, lastChange = v, time.Now()
		}
		return v >= want && time.Since(lastChange) >= time.Second, fmt.Sprintf("%d of at least %d", v, want)
	})
	if checkErr != nil {
		return checkErr
	}
	return err
}
