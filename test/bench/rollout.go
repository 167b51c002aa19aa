package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Staged rollouts (issue 47). After the create-and-delete flow, on the
// same stack and the same N pools, the product rolls out two more class
// defaults of the class, each with spec.rollout:
//
//   - stagedDefault, steps 1%, 10%, 100% and no bake: timed as the wave is
//     (from the config's creation until status.rollout.phase Completed and
//     every pool on it with its event) and set against the unstaged wave
//     of the same run;
//   - bakedDefault, the same steps with a bake of bakePause after step 1:
//     during the bake, the product's API requests per second and
//     kube-apiserver's CPU.
//
// For each: the pool and config LISTs the API server served during the
// rollout, the rollout workflow's history events and state transitions
// per step, and a correctness check (each pool moved once, after the
// admission of its step; each step ends with its share of the pools).
//
// The bench observes the rollouts through its watches only (watcher: the
// pools, their events, the configs' status.rollout), so its observation
// costs no request per look; its own requests (the config's create, and
// any re-list of its informers) are counted by its client and subtracted
// from the API server's counters (productRequests), so what is left is
// the product's.
const (
	stagedDefault = "gvisor-default-staged"
	bakedDefault  = "gvisor-default-baked"
	// bakePause is the bake of the second rollout's first step.
	bakePause = 60 * time.Second
	// bakeMargin: the bake's window ends this long before its timer can
	// fire, so that the next step's look and admission are not counted.
	bakeMargin = 5 * time.Second
)

// rolloutResource says whether the product reads or writes res: one of
// productResources, or the configs' status, which the rollout workflow
// (status.rollout) and the config keeper (conditions) write.
// productResources predates that subresource and leaves it out, so the
// wave's counts do not include it; the rollouts' do.
func rolloutResource(res string) bool {
	return productResources[res] || res == "sandboxconfigs.ate.dev/status"
}

// stagedPercents are the steps of both rollouts.
var stagedPercents = []int32{1, 10, 100}

// stagedConfig is a class default named name with a staged rollout of
// stagedPercents, and pause (if any) after the first step.
func stagedConfig(name string, pause time.Duration) *v1alpha1.SandboxConfig {
	c := gvisorDefault(name)
	ro := &v1alpha1.SandboxConfigRollout{}
	for i, p := range stagedPercents {
		s := v1alpha1.RolloutStep{Percent: ptrTo(p)}
		if i == 0 && pause > 0 {
			s.Pause = &metav1.Duration{Duration: pause}
		}
		ro.Steps = append(ro.Steps, s)
	}
	c.Spec.Rollout = ro
	return c
}

// wantAfter is how many of n pools must be on the config once a step of
// percent is done: the share rounded up (rollout.Want).
func wantAfter(percent int32, n int) int {
	return min(n, int(math.Ceil(float64(percent)*float64(n)/100)))
}

// rolloutFigures are the staged rollouts' headline numbers of a size,
// inlined in the result's JSON (absent when -rollout=false): the first
// rollout's time and its ratio to the wave, the LISTs of both, the
// second's bake.
type rolloutFigures struct {
	// RolloutSeconds: the rollout with no bake (rolloutRun.Seconds);
	// RolloutRatioToWave: over the unstaged wave's Seconds.
	RolloutSeconds     float64 `json:"rollout_seconds"`
	RolloutRatioToWave float64 `json:"rollout_ratio_to_wave"`
	// RolloutPoolLists, RolloutConfigLists: LISTs of WorkerPools and of
	// SandboxConfigs the product made during both rollouts.
	RolloutPoolLists   float64 `json:"rollout_pool_lists"`
	RolloutConfigLists float64 `json:"rollout_config_lists"`
	// During the bake: the product's requests per second by verb and
	// resource, their total (watches left out: a watch is a stream, counted
	// by the API server when it ends), and kube-apiserver's CPU in percent
	// of one core.
	RolloutBakeRequestsPerSecond      map[string]float64 `json:"rollout_bake_requests_per_second"`
	RolloutBakeRequestsPerSecondTotal float64            `json:"rollout_bake_requests_per_second_total"`
	RolloutBakeAPICPUPercent          float64            `json:"rollout_bake_api_cpu_percent"`
	// The rollout workflow's history events and state transitions per
	// step, of the rollout with no bake.
	RolloutHistoryEventsPerStep    float64 `json:"rollout_history_events_per_step"`
	RolloutStateTransitionsPerStep float64 `json:"rollout_state_transitions_per_step"`
	// RolloutProblems: what the rollouts' correctness checks found (also
	// in Failures).
	RolloutProblems int `json:"rollout_problems"`
}

// rolloutOf is r's rollout figures, zero when not measured.
func rolloutOf(r *result) rolloutFigures {
	if r.rolloutFigures == nil {
		return rolloutFigures{}
	}
	return *r.rolloutFigures
}

// rolloutRun is one staged rollout of the N pools from From to Config.
type rolloutRun struct {
	Config     string  `json:"config"`
	From       string  `json:"from"`
	Percents   []int32 `json:"step_percents"`
	Pause      float64 `json:"step1_pause_seconds,omitempty"`
	WorkflowID string  `json:"workflow_id"`
	// Seconds: from the config's creation until the watch saw
	// status.rollout.phase Completed and every pool on the config with its
	// SandboxConfigSwitched event, whichever was last; CompletedSeconds
	// the phase alone; Pools the pools' times, as a wave's.
	Seconds          float64   `json:"seconds"`
	CompletedSeconds float64   `json:"completed_seconds"`
	Pools            waveTimes `json:"pools"`
	// RatioToWave: Seconds over the unstaged wave's, of a rollout with no
	// bake.
	RatioToWave float64 `json:"ratio_to_wave,omitempty"`
	// SettleSeconds: until the API server saw the product's last request.
	SettleSeconds float64          `json:"settle_seconds"`
	Steps         []rolloutStepRun `json:"steps"`
	// The product's requests from the creation until quiet (the bench's
	// own subtracted): LISTs of pools and of configs, and all by verb and
	// resource.
	PoolLists   float64            `json:"pool_lists"`
	ConfigLists float64            `json:"config_lists"`
	Requests    map[string]float64 `json:"requests"`
	CPUSeconds  map[string]float64 `json:"cpu_seconds"`
	// The rollout workflow's every run (continued-as-new or started
	// again), closed: its history events and state transitions, and per
	// step.
	Runs                    int      `json:"runs"`
	HistoryEvents           int      `json:"history_events"`
	StateTransitions        int64    `json:"state_transitions"`
	HistoryEventsPerStep    float64  `json:"history_events_per_step"`
	StateTransitionsPerStep float64  `json:"state_transitions_per_step"`
	Bake                    *bakeRun `json:"bake,omitempty"`
	Problems                []string `json:"problems,omitempty"`
}

// rolloutStepRun is one step as the watch saw it: when status.rollout
// first showed it (AdmittedSeconds, from the creation) and when it showed
// the next step or Completed (EndSeconds), the pools the status admitted
// then, and how many pools had moved to the config by its end (Want of
// them is right).
type rolloutStepRun struct {
	Step            int32   `json:"step"`
	Percent         int32   `json:"percent"`
	Want            int     `json:"want"`
	AdmittedSeconds float64 `json:"admitted_seconds"`
	EndSeconds      float64 `json:"end_seconds"`
	AdmittedPools   int32   `json:"admitted_pools"`
	MovedAtEnd      int     `json:"moved_at_end"`
}

// bakeRun is the bake of the second rollout's first step.
type bakeRun struct {
	// Seconds: from the watch seeing phase Baking at step 1 until it saw
	// the phase change.
	Seconds float64 `json:"seconds"`
	// WindowSeconds: what the rates are measured over: from the watch
	// seeing Baking until bakeMargin before the bake's timer can fire.
	WindowSeconds float64 `json:"window_seconds"`
	// The product's requests per second by verb and resource (watches
	// included; rolloutResource), their total without watches, and the
	// API server's other requests (its own leases and the like) per
	// second, in total and by verb and resource.
	RequestsPerSecond      map[string]float64 `json:"requests_per_second"`
	TotalPerSecond         float64            `json:"total_requests_per_second"`
	BackgroundPerSecond    float64            `json:"background_requests_per_second"`
	Background             map[string]float64 `json:"background"`
	CPUPercent             map[string]float64 `json:"cpu_percent"`
	WorkerActivities       float64            `json:"worker_activities"`
	StarterSignalsByKind   map[string]float64 `json:"starter_signals"`
	StillBakingAtWindowEnd bool               `json:"still_baking_at_window_end"`
}

// rolloutMark is status.rollout of a config as one update showed it.
type rolloutMark struct {
	at                           time.Time
	rv                           uint64
	phase                        v1alpha1.RolloutPhase
	step, admitted, moved, total int32
	through                      *v1alpha1.RolloutPoolRef
	canaries                     []string
	workflowID                   string
	// message is the status's message when the other fields last changed.
	message string
}

func (m rolloutMark) same(o rolloutMark) bool {
	return m.phase == o.phase && m.step == o.step && m.admitted == o.admitted && m.moved == o.moved && m.total == o.total &&
		(m.through == nil) == (o.through == nil) && (m.through == nil || *m.through == *o.through) && slices.Equal(m.canaries, o.canaries)
}

// admits reports whether the admission m shows lets pool ("ns/name")
// move: a Completed rollout lets every pool, else the canaries it names
// and the pools at or before admittedThrough by namespace, then name (the
// bench's pools carry no canary label).
func (m rolloutMark) admits(pool string) bool {
	if m.phase == v1alpha1.RolloutCompleted || slices.Contains(m.canaries, pool) {
		return true
	}
	t := m.through
	if t == nil || t.Canary {
		return false
	}
	ns, name, _ := strings.Cut(pool, "/")
	return ns < t.Namespace || ns == t.Namespace && name <= t.Name
}

// config records a change of a config's status.rollout.
func (w *watcher) config(o any) {
	c, ok := o.(*v1alpha1.SandboxConfig)
	if !ok || c.Status.Rollout == nil {
		return
	}
	st := c.Status.Rollout
	m := rolloutMark{at: time.Now(), rv: resourceVersion(c.ResourceVersion), phase: st.Phase, step: st.Step,
		admitted: st.AdmittedPools, moved: st.MovedPools, total: st.TotalPools, canaries: slices.Clone(st.AdmittedCanaries),
		workflowID: st.WorkflowID, message: st.Message}
	if st.AdmittedThrough != nil {
		t := *st.AdmittedThrough
		m.through = &t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	marks := w.rollouts[c.Name]
	if len(marks) > 0 && marks[len(marks)-1].same(m) {
		return
	}
	w.rollouts[c.Name] = append(marks, m)
}

// rolloutTrace is every change of config's status.rollout seen so far.
func (w *watcher) rolloutTrace(config string) []rolloutMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.rollouts[config])
}

// rolloutNow is config's status.rollout as last seen.
func (w *watcher) rolloutNow(config string) (rolloutMark, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	marks := w.rollouts[config]
	if len(marks) == 0 {
		return rolloutMark{}, false
	}
	return marks[len(marks)-1], true
}

// rolloutView is what the correctness check of a rollout to a config
// reads from the watch.
type rolloutView struct {
	marks []rolloutMark
	// movedRV[pool]: the resourceVersion of the pool's first update that
	// named the config (Resolved, no claim); moves[pool]: how many times
	// its status came to name it.
	movedRV map[string]uint64
	moves   map[string]int
	// events[pool]: its SandboxConfigSwitched events to the config;
	// current[pool]: the config it names now.
	events  map[string]int
	current map[string]string
}

func (w *watcher) rolloutView(config string) rolloutView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return rolloutView{marks: slices.Clone(w.rollouts[config]), movedRV: maps.Clone(w.switchedRV[config]),
		moves: maps.Clone(w.moves[config]), events: maps.Clone(w.perPool[config]), current: maps.Clone(w.current)}
}

// stepEnd is the first mark that shows step k over: a later step, or
// Completed.
func stepEnd(marks []rolloutMark, k int32) (rolloutMark, bool) {
	for _, m := range marks {
		if m.step > k || m.phase == v1alpha1.RolloutCompleted {
			return m, true
		}
	}
	return rolloutMark{}, false
}

// movedBefore counts the pools whose move to the config came before the
// update of resourceVersion rv.
func movedBefore(moved map[string]uint64, rv uint64) int {
	c := 0
	for _, v := range moved {
		if v < rv {
			c++
		}
	}
	return c
}

// stepsOf is each step as the watch saw it, times from start.
func stepsOf(v rolloutView, percents []int32, n int, start time.Time) []rolloutStepRun {
	var out []rolloutStepRun
	for i, p := range percents {
		k := int32(i + 1)
		s := rolloutStepRun{Step: k, Percent: p, Want: wantAfter(p, n)}
		for _, m := range v.marks {
			if m.step >= k {
				s.AdmittedSeconds = secs(m.at.Sub(start))
				break
			}
		}
		if end, ok := stepEnd(v.marks, k); ok {
			s.EndSeconds, s.MovedAtEnd = secs(end.at.Sub(start)), movedBefore(v.movedRV, end.rv)
		}
		for _, m := range v.marks {
			if m.step == k && m.phase != v1alpha1.RolloutCompleted {
				s.AdmittedPools = m.admitted
			}
		}
		out = append(out, s)
	}
	return out
}

// checkRollout says what is wrong after a staged rollout of n pools to
// config in steps of percents: what checkWave finds of a wave (every pool
// on the config, exactly one SandboxConfigSwitched event each); a pool
// whose status came to name the config other than once; a pool that moved
// before an admission let it (its first update naming the config is older
// than the config's first status write admitting it: both are
// resourceVersions of the one etcd, which order them whatever the order
// in which the two watches delivered them); a step that ended with other
// than its share of the pools on the config (counted up to the status
// write that shows the next step, or Completed); and a rollout the watch
// never saw Completed. Nothing wrong is an empty list.
func checkRollout(config string, n int, percents []int32, v rolloutView) []string {
	out := checkWave(config, "", n, v.current, v.events, true)
	var twice []string
	for pool, c := range v.moves {
		if c != 1 {
			twice = append(twice, fmt.Sprintf("%s moved %d times", pool, c))
		}
	}
	if len(twice) > 0 {
		slices.Sort(twice)
		out = append(out, fmt.Sprintf("%d pools did not move to %s exactly once: %s", len(twice), config, firstFew(twice)))
	}
	var early []string
	for _, pool := range slices.Sorted(maps.Keys(v.movedRV)) {
		rv := v.movedRV[pool]
		i := slices.IndexFunc(v.marks, func(m rolloutMark) bool { return m.admits(pool) })
		switch {
		case i < 0:
			early = append(early, pool+" never admitted")
		case rv <= v.marks[i].rv:
			early = append(early, fmt.Sprintf("%s at resourceVersion %d, admitted at step %d by the status write of %d", pool, rv, v.marks[i].step, v.marks[i].rv))
		}
	}
	if len(early) > 0 {
		out = append(out, fmt.Sprintf("%d pools moved to %s before a step admitted them: %s", len(early), config, firstFew(early)))
	}
	for i, p := range percents {
		k := int32(i + 1)
		end, ok := stepEnd(v.marks, k)
		if !ok {
			out = append(out, fmt.Sprintf("step %d (%d%%) never ended", k, p))
			continue
		}
		if got, want := movedBefore(v.movedRV, end.rv), wantAfter(p, n); got != want {
			out = append(out, fmt.Sprintf("step %d (%d%%) ended with %d of %d pools on %s, not %d", k, p, got, n, config, want))
		}
	}
	if !slices.ContainsFunc(v.marks, func(m rolloutMark) bool { return m.phase == v1alpha1.RolloutCompleted }) {
		out = append(out, fmt.Sprintf("status.rollout of %s never showed phase %s", config, v1alpha1.RolloutCompleted))
	}
	return out
}

// measureRollouts runs the two staged rollouts after the create-and-delete
// flow (the pools on rollDefault) and fills r's rollout figures.
func measureRollouts(ctx context.Context, cfg config, s *stack, w *watcher, wp, sp *process, n int, r *result, log *slog.Logger) error {
	if err := makeAvailable(ctx, cfg, s, w, wp, n); err != nil {
		return err
	}
	staged, err := measureRollout(ctx, s, w, wp, sp, n, stagedDefault, rollDefault, 0, r, log)
	if err != nil {
		return fmt.Errorf("the staged rollout to %s: %w", stagedDefault, err)
	}
	baked, err := measureRollout(ctx, s, w, wp, sp, n, bakedDefault, stagedDefault, bakePause, r, log)
	if err != nil {
		return fmt.Errorf("the staged rollout to %s: %w", bakedDefault, err)
	}
	r.Rollouts = []*rolloutRun{staged, baked}
	f := &rolloutFigures{
		RolloutSeconds: staged.Seconds, RolloutRatioToWave: staged.RatioToWave,
		RolloutHistoryEventsPerStep: staged.HistoryEventsPerStep, RolloutStateTransitionsPerStep: staged.StateTransitionsPerStep,
	}
	for _, run := range r.Rollouts {
		f.RolloutPoolLists += run.PoolLists
		f.RolloutConfigLists += run.ConfigLists
		f.RolloutProblems += len(run.Problems)
	}
	if b := baked.Bake; b != nil {
		f.RolloutBakeRequestsPerSecond, f.RolloutBakeRequestsPerSecondTotal = b.RequestsPerSecond, b.TotalPerSecond
		f.RolloutBakeAPICPUPercent = b.CPUPercent["kube-apiserver"]
	}
	r.rolloutFigures = f
	return nil
}

// makeAvailable gives every pool an Available condition, which a
// rollout's step waits for: the pool keeper mirrors it from the pool's
// Deployment, whose Available condition the Deployment controller writes.
// Without -cluster there is none, so the bench writes it on each
// Deployment as that controller would (as the e2e tests do,
// producttest.SetAvailable); with -cluster the controller has. Then it
// waits until every pool shows it and the product is quiet, before the
// first rollout's clock starts.
func makeAvailable(ctx context.Context, cfg config, s *stack, w *watcher, wp *process, n int) error {
	start := time.Now()
	if !cfg.cluster {
		var ds appsv1.DeploymentList
		if err := s.kc.List(ctx, &ds, client.HasLabels{v1alpha1.WorkerPoolLabel}); err != nil {
			return fmt.Errorf("listing the pools' Deployments: %w", err)
		}
		now := metav1.Now()
		if err := parallel(ctx, len(ds.Items), 16, func(ctx context.Context, i int) error {
			d := &ds.Items[i]
			d.Status.ObservedGeneration = d.Generation
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True", Reason: "MinimumReplicasAvailable",
				Message: "set by the bench, as the Deployment controller would", LastUpdateTime: now, LastTransitionTime: now}}
			if err := s.kc.Status().Update(ctx, d); err != nil {
				return fmt.Errorf("making Deployment %s/%s Available: %w", d.Namespace, d.Name, err)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := until(ctx, timeoutFor(2*time.Minute, n), "every pool Available", func() (bool, string) {
		a := w.availableCount()
		return a == n, fmt.Sprintf("%d of %d", a, n)
	}); err != nil {
		return err
	}
	_, err := quiesceOn(ctx, s, start, wp, rolloutResource)
	return err
}

// measureRollout creates name, a class default with a staged rollout
// (pause after step 1, if any), moving the n pools from from; it times the
// rollout, measures the bake, counts the product's requests until quiet
// and the rollout workflow's history, and checks it.
func measureRollout(ctx context.Context, s *stack, w *watcher, wp, sp *process, n int, name, from string, pause time.Duration, r *result, log *slog.Logger) (*rolloutRun, error) {
	run := &rolloutRun{Config: name, From: from, Percents: stagedPercents, Pause: pause.Seconds(), WorkflowID: benchCluster.RolloutWorkflowID(name)}
	before, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.kc.Create(ctx, stagedConfig(name, pause)); err != nil {
		return nil, fmt.Errorf("creating class default %s: %w", name, err)
	}
	timeout := timeoutFor(15*time.Minute, n) + pause
	if pause > 0 {
		if run.Bake, err = measureBake(ctx, s, w, wp, sp, name, pause, timeout); err != nil {
			return nil, err
		}
	}
	var ended error
	if err := until(ctx, timeout, name+"'s rollout Completed, every pool on it with its event", func() (bool, string) {
		m, _ := w.rolloutNow(name)
		switched, events := w.wave(name)
		switch m.phase {
		case v1alpha1.RolloutHalted, v1alpha1.RolloutAborted, v1alpha1.RolloutRolledBack, v1alpha1.RolloutStopped, v1alpha1.RolloutSuperseded:
			ended = fmt.Errorf("the rollout of %s ended %s at step %d: %s", name, m.phase, m.step, m.message)
			return true, ""
		}
		return m.phase == v1alpha1.RolloutCompleted && switched == n && events == n,
			fmt.Sprintf("phase %q step %d, %d admitted, %d switched, %d events of %d", m.phase, m.step, m.admitted, switched, events, n)
	}); err != nil {
		return nil, err
	}
	if ended != nil {
		return nil, ended
	}
	v := w.rolloutView(name)
	for _, m := range v.marks {
		if m.phase == v1alpha1.RolloutCompleted {
			run.CompletedSeconds = secs(m.at.Sub(start))
			break
		}
	}
	if len(v.marks) > 0 && v.marks[len(v.marks)-1].workflowID != "" {
		run.WorkflowID = v.marks[len(v.marks)-1].workflowID
	}
	lastSwitch, lastEvent := w.at(name, 1)
	half, _ := w.at(name, 0.5)
	p90, _ := w.at(name, 0.9)
	run.Pools = waveTimes{StatusSeconds: secs(lastSwitch.Sub(start)), EventsSeconds: secs(lastEvent.Sub(start)),
		HalfSeconds: secs(half.Sub(start)), P90Seconds: secs(p90.Sub(start))}
	run.Pools.Seconds = max(run.Pools.StatusSeconds, run.Pools.EventsSeconds)
	run.Seconds = max(run.Pools.Seconds, run.CompletedSeconds)
	if r.Seconds > 0 && pause == 0 {
		run.RatioToWave = round(run.Seconds/r.Seconds, 2)
	}
	settled, err := quiesceOn(ctx, s, start, wp, rolloutResource)
	if err != nil {
		return nil, err
	}
	run.SettleSeconds = secs(settled.Sub(start))
	after, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	// The LISTs are the API server's over the window less the bench's own
	// (productRequests): the bench lists nothing in it, its informers
	// (pools, events, configs) having listed once when they started; the
	// product's informers list only when they start or re-list, so a LIST
	// counted here is the product's live read.
	reqs := productRequests(after, before)
	run.PoolLists = reqs[reqKey{Verb: "LIST", Resource: "workerpools.ate.dev"}]
	run.ConfigLists = reqs[reqKey{Verb: "LIST", Resource: "sandboxconfigs.ate.dev"}]
	run.Requests = map[string]float64{}
	for k, v := range reqs {
		if rolloutResource(k.Resource) {
			run.Requests[k.String()] = v
		}
	}
	run.CPUSeconds = after.cpu.since(before.cpu)
	if run.Runs, run.HistoryEvents, run.StateTransitions, err = workflowCost(ctx, s, run.WorkflowID); err != nil {
		return nil, err
	}
	steps := float64(len(stagedPercents))
	run.HistoryEventsPerStep = round(float64(run.HistoryEvents)/steps, 2)
	run.StateTransitionsPerStep = round(float64(run.StateTransitions)/steps, 2)
	v = w.rolloutView(name)
	run.Steps = stepsOf(v, stagedPercents, n, start)
	run.Problems = checkRollout(name, n, stagedPercents, v)
	r.fail("the staged rollout to "+name, run.Problems, log)
	log.Info("staged rollout", "config", name, "seconds", run.Seconds, "ratioToWave", run.RatioToWave, "completedSeconds", run.CompletedSeconds,
		"poolLists", run.PoolLists, "configLists", run.ConfigLists, "historyEventsPerStep", run.HistoryEventsPerStep,
		"stateTransitionsPerStep", run.StateTransitionsPerStep, "problems", len(run.Problems), "cpu", formatCPU(run.CPUSeconds))
	return run, nil
}

// measureBake waits for config's rollout to bake at step 1 and measures,
// from the watch seeing it until bakeMargin before its timer can fire
// (the timer starts before the status write that says Baking, so it fires
// at most pause after the watch saw it), the product's requests (the API
// server's counters less the bench's own: the bench makes none in the
// window, its scrapes of /metrics being no resource's) and every
// process's CPU; then it waits for the phase to change, for the bake's
// length.
func measureBake(ctx context.Context, s *stack, w *watcher, wp, sp *process, config string, pause, timeout time.Duration) (*bakeRun, error) {
	baking := func() bool {
		m, _ := w.rolloutNow(config)
		return m.phase == v1alpha1.RolloutBaking && m.step == 1
	}
	if err := until(ctx, timeout, config+"'s rollout baking at step 1", func() (bool, string) {
		m, _ := w.rolloutNow(config)
		return baking(), fmt.Sprintf("phase %q step %d", m.phase, m.step)
	}); err != nil {
		return nil, err
	}
	seen := time.Now()
	a, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(time.Until(seen.Add(pause - bakeMargin))):
	}
	b, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	bake := &bakeRun{StillBakingAtWindowEnd: baking(), RequestsPerSecond: map[string]float64{}, Background: map[string]float64{},
		CPUPercent: map[string]float64{}}
	if !bake.StillBakingAtWindowEnd {
		return nil, errors.New("the bake ended before the end of the window measured: a look ended it, or the clock is off")
	}
	window := b.at.Sub(a.at).Seconds()
	bake.WindowSeconds = round(window, 2)
	for k, v := range productRequests(b, a) {
		if !rolloutResource(k.Resource) {
			bake.BackgroundPerSecond += v / window
			bake.Background[k.String()] = round(v/window, 3)
			continue
		}
		bake.RequestsPerSecond[k.String()] = round(v/window, 3)
		if k.Verb != "WATCH" {
			bake.TotalPerSecond += v / window
		}
	}
	bake.TotalPerSecond, bake.BackgroundPerSecond = round(bake.TotalPerSecond, 3), round(bake.BackgroundPerSecond, 3)
	for proc, c := range b.cpu.since(a.cpu) {
		bake.CPUPercent[proc] = round(100*c/window, 1)
	}
	_, acts, locals := activitiesRun(diffMetrics(b.worker, a.worker))
	bake.WorkerActivities = acts + locals
	bake.StarterSignalsByKind = signals(diffMetrics(b.starter, a.starter))
	if err := until(ctx, timeout, config+"'s rollout to end its bake", func() (bool, string) { return !baking(), "baking" }); err != nil {
		return nil, err
	}
	for _, m := range w.rolloutTrace(config) {
		if m.phase != v1alpha1.RolloutBaking && m.step >= 1 && m.at.After(seen) {
			bake.Seconds = secs(m.at.Sub(seen))
			break
		}
	}
	return bake, nil
}

// workflowCost waits until the workflow id has a run and none running,
// and sums the history events and the state transitions of every run.
func workflowCost(ctx context.Context, s *stack, id string) (runs, events int, transitions int64, err error) {
	query := fmt.Sprintf("WorkflowId = %q", id)
	var execs []execRef
	if err := untilEvery(ctx, 100*time.Millisecond, time.Minute, "a run of "+id, func() (bool, string) {
		execs, err = listExecutions(ctx, s.tc, query)
		return err == nil && len(execs) > 0, fmt.Sprintf("%d runs (%v)", len(execs), err)
	}); err != nil {
		return 0, 0, 0, err
	}
	if err := awaitNoneRunning(ctx, s, query, "the runs of "+id+" to close"); err != nil {
		return 0, 0, 0, err
	}
	if execs, err = listExecutions(ctx, s.tc, query); err != nil {
		return 0, 0, 0, err
	}
	for _, e := range execs {
		h, err := history(ctx, s.tc, e.ID, e.RunID)
		if err != nil {
			return 0, 0, 0, err
		}
		events += len(h)
		n, err := settledTransitions(ctx, s.tc, e.ID, e.RunID)
		if err != nil {
			return 0, 0, 0, err
		}
		transitions += n
	}
	return len(execs), events, transitions, nil
}
