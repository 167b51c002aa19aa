package main

import (
	"maps"
	"strings"
)

// result is one size's measurements; the JSON names are the contract of
// test/bench/results/latest.json.
type result struct {
	Pools int    `json:"pools"`
	Date  string `json:"date"`
	// Commit is the commit measured, "+dirty" when the product's or the
	// bench's files differed from it.
	Commit string  `json:"commit"`
	Load1  float64 `json:"load1_at_start"`
	// Repeat is which of Repeats measurements of this size (-repeat) this
	// is; SlowestOverFastest, on every repeat of a size measured more than
	// once, is the slowest repeat's Seconds over the fastest's.
	Repeat             int     `json:"repeat"`
	Repeats            int     `json:"repeats"`
	SlowestOverFastest float64 `json:"slowest_over_fastest,omitempty"`
	// RunSeconds: the whole measurement of this size, servers included.
	RunSeconds float64 `json:"run_seconds"`
	// PollerBehavior: the workflow task poller behaviour of the product's
	// worker and the floor's (-poller-behavior).
	PollerBehavior string `json:"poller_behavior"`

	// The product's wave to the new default (Seconds and the rest).
	waveTimes
	// SwitchSettleSeconds: until the API server saw the product's last
	// request of the switch (the passes' trailing writes, if any).
	SwitchSettleSeconds float64 `json:"switch_settle_seconds"`
	SwitchesPerSecond   float64 `json:"switches_per_second"`
	// ActivityConcurrency: activities and local activities the product's
	// worker ran at once during the switch (sampled).
	ActivityConcurrency concurrency `json:"activity_concurrency"`
	// Pods: with -pod-replicas, the pods' coming up and the wave with them
	// present (pods.go).
	Pods *podsRun `json:"pods,omitempty"`
	// TaskQueue: the product task queue's workflow task backlog during the
	// switch (tqsample.go).
	TaskQueue *taskQueueStats `json:"workflow_task_backlog"`

	APIFloorSeconds     float64 `json:"api_floor_seconds"`
	APIFloorWrites      int     `json:"api_floor_writes"`
	APIFloorConcurrency int     `json:"api_floor_concurrency"`
	// TemporalFloorSeconds: until every no-op switch's RecordEvent ran (the
	// point the product is timed to); Full: until every pass ended.
	// The floor is the best of TemporalFloorTries runs (their times in
	// TemporalFloorTriesSeconds): a run now and then stalls with workflow
	// tasks waiting about the task timeout (10 s) to be picked up, and a
	// floor must be what the server can do, not its worst.
	TemporalFloorSeconds      float64   `json:"temporal_floor_seconds"`
	TemporalFloorFullSeconds  float64   `json:"temporal_floor_full_seconds"`
	TemporalFloorTriesSeconds []float64 `json:"temporal_floor_tries_seconds"`
	// TemporalFloorEagerSeconds (-eager): the floor with its switches
	// started with eager workflow start (floor.go), the best of as many
	// tries, and its Temporal CPU per switch.
	TemporalFloorEagerSeconds                float64 `json:"temporal_floor_eager_seconds,omitempty"`
	TemporalFloorEagerTemporalCPUMsPerSwitch float64 `json:"temporal_floor_eager_temporal_cpu_ms_per_switch,omitempty"`
	RatioAPIFloor                            float64 `json:"ratio_to_api_floor"`
	RatioTemporalFloor                       float64 `json:"ratio_to_temporal_floor"`
	// Shapes: the no-op floor of the switch workflow, under floorKey
	// (runs recorded before decisions/0003 key it "lean" and may hold
	// other, since deleted, shapes beside it).
	Shapes map[string]*shapeFloor `json:"shapes"`
	// The floor's CPU per process and its worker's schedule-to-start means.
	FloorCPUSeconds              map[string]float64 `json:"floor_cpu_seconds"`
	FloorActivityScheduleToStart float64            `json:"floor_activity_schedule_to_start_ms"`
	FloorWFTaskScheduleToStart   float64            `json:"floor_workflow_task_schedule_to_start_ms"`

	ReleaseSeconds       float64 `json:"release_seconds"`
	ReleaseSettleSeconds float64 `json:"release_settle_seconds"`
	ProductWarmSeconds   float64 `json:"product_warm_up_seconds"`

	// API requests of the product (the API server's counters minus the
	// bench's own), per switch during step 3, and in total during step 4.
	WritesPerSwitch       float64            `json:"writes_per_switch"`
	ReadsPerSwitch        float64            `json:"reads_per_switch"`
	EventCreatesPerSwitch float64            `json:"event_creates_per_switch"`
	PoolListsDuringSwitch float64            `json:"pool_lists_during_switch"`
	SwitchRequests        map[string]float64 `json:"switch_requests"`
	ReleaseWrites         float64            `json:"release_writes"`
	ReleaseReads          float64            `json:"release_reads"`
	ReleaseRequests       map[string]float64 `json:"release_requests"`
	BackgroundRequests    float64            `json:"background_requests"`
	EventsRecorded        int                `json:"switch_events_recorded"`

	// Temporal: from sampled executions (History, per switch) and the
	// worker's and starter's own metrics during step 3.
	// StateTransitionsPerSwitch: the StateTransitionCount of every
	// execution a switch started, plus what a long-running pool workflow
	// (the pool+child product) gained during the switch (history.go).
	StateTransitionsPerSwitch      float64            `json:"state_transitions_per_switch"`
	FloorStateTransitionsPerSwitch float64            `json:"floor_state_transitions_per_switch"`
	HistoryEventsPerSwitch         float64            `json:"history_events_per_switch"`
	History                        *shapeStats        `json:"history"`
	FloorHistory                   *shapeStats        `json:"floor_history"`
	ActivitiesPerSwitch            float64            `json:"activities_per_switch"`
	LocalActivitiesPerPass         float64            `json:"local_activities_per_switch"`
	ActivitiesByType               map[string]float64 `json:"activities_by_type"`
	ActivityScheduleToStart        float64            `json:"activity_schedule_to_start_ms"`
	WFTaskScheduleToStart          float64            `json:"workflow_task_schedule_to_start_ms"`
	StarterSignals                 map[string]float64 `json:"starter_signals_during_switch"`
	ReleaseSignals                 map[string]float64 `json:"starter_signals_during_release"`
	StarterMetricsDuringSwitch     map[string]float64 `json:"starter_metrics_during_switch"`
	ReleaseActivities              float64            `json:"release_activities"`

	// The plain reconciler (package baseline), the product stopped: one wave per
	// MaxConcurrentReconciles. PlainReconcilerSeconds is the faster wave,
	// PlainReconcilerSecondsSerial the one at 1 (controller-runtime's
	// default); RatioPlainReconciler = Seconds / PlainReconcilerSeconds.
	PlainReconcilerSeconds       float64     `json:"plain_reconciler_seconds"`
	PlainReconcilerSecondsSerial float64     `json:"plain_reconciler_seconds_serial"`
	RatioPlainReconciler         float64     `json:"ratio_to_plain_reconciler"`
	PlainReconciler              []*plainRun `json:"plain_reconciler"`

	// KubeCPUMsPerSwitch: CPU of kube-apiserver, etcd, the worker and the
	// starter during step 3 (until quiet), per switch; TemporalCPUMsPerSwitch
	// the dev server's.
	KubeCPUMsPerSwitch     float64 `json:"kube_cpu_ms_per_switch"`
	TemporalCPUMsPerSwitch float64 `json:"temporal_cpu_ms_per_switch"`

	// The starter's restart over the N up-to-date pools (restart.go).
	RestartSeconds                 float64        `json:"restart_seconds"`
	RestartStateTransitionsPerPool float64        `json:"restart_state_transitions_per_pool"`
	Restart                        *restartResult `json:"restart"`

	// WorkerRSSMiB, StarterRSSMiB: VmRSS at rest after the switch (before
	// the release); the peaks (VmHWM) cover start-up, switch, release and,
	// for the starter, both of its processes; RSSMiB is their sum.
	WorkerRSSMiB      float64            `json:"worker_rss_mib"`
	StarterRSSMiB     float64            `json:"starter_rss_mib"`
	WorkerPeakRSSMiB  float64            `json:"worker_peak_rss_mib"`
	StarterPeakRSSMiB float64            `json:"starter_peak_rss_mib"`
	RSSMiB            float64            `json:"rss_mib"`
	SwitchCPUSeconds  map[string]float64 `json:"switch_cpu_seconds"`
	ReleaseCPU        map[string]float64 `json:"release_cpu_seconds"`

	// WorkerRestRSSMiB, StarterRestRSSMiB: VmRSS at rest with the N pools
	// present, before the wave (the product warm and quiet); the base ones
	// the same processes' at rest before any pool existed (0 pools, the
	// product ready and quiet); KBPerPool: (rest - base) / N, in KiB.
	WorkerBaseRSSMiB  float64 `json:"worker_base_rss_mib"`
	StarterBaseRSSMiB float64 `json:"starter_base_rss_mib"`
	WorkerRestRSSMiB  float64 `json:"worker_rest_rss_mib"`
	StarterRestRSSMiB float64 `json:"starter_rest_rss_mib"`
	WorkerKBPerPool   float64 `json:"worker_kb_per_pool"`
	StarterKBPerPool  float64 `json:"starter_kb_per_pool"`

	// Roll: the create-and-delete flow (a new default created and the
	// current one deleted at once), after the restart.
	Roll *rollRun `json:"create_and_delete,omitempty"`
	// The staged rollouts after it (rollout.go; none with -rollout=false):
	// their headline figures inlined (rollout_seconds, ...), and each
	// rollout in full.
	*rolloutFigures
	Rollouts []*rolloutRun `json:"rollouts,omitempty"`
	// Failures: what the correctness checks found wrong (the run fails).
	Failures []string `json:"failures,omitempty"`

	// Targets: each target's verdict on this size (checker.go);
	// RunTargets, on the run's last result, those judged over the run.
	Targets    map[string]string `json:"targets"`
	RunTargets []runVerdict      `json:"run_targets,omitempty"`
}

// rollRun is the create-and-delete flow: Config created as the class
// default and Old, the current one, deleted right after.
type rollRun struct {
	Config string `json:"config"`
	Old    string `json:"old"`
	// Seconds: the wave to Config, timed as the first wave.
	Seconds float64 `json:"seconds"`
	// ReleaseAfterLastMoveSeconds: from the last pool's status naming
	// Config until Old was gone from the API server.
	ReleaseAfterLastMoveSeconds float64 `json:"release_after_last_move_seconds"`
	// ReleaseSignals: WorkflowExecutionSignaled events in the histories of
	// every run of Old's release workflow (ReleaseRuns of them).
	ReleaseSignals int `json:"release_signals"`
	ReleaseRuns    int `json:"release_runs"`
}

// restPerPool fills the RSS per pool at rest from the rest and base
// readings.
func (r *result) restPerPool() {
	if r.Pools == 0 {
		return
	}
	perPool := func(rest, base float64) float64 { return round((rest-base)*1024/float64(r.Pools), 1) }
	r.WorkerKBPerPool = perPool(r.WorkerRestRSSMiB, r.WorkerBaseRSSMiB)
	r.StarterKBPerPool = perPool(r.StarterRestRSSMiB, r.StarterBaseRSSMiB)
	for _, v := range []*float64{&r.WorkerRestRSSMiB, &r.WorkerBaseRSSMiB, &r.StarterRestRSSMiB, &r.StarterBaseRSSMiB} {
		*v = round(*v, 1)
	}
}

func (r *result) fillCosts(before, mid, after *snap) {
	n := float64(r.Pools)
	sw := summarize(productRequests(mid, before))
	r.WritesPerSwitch = round(sw.Writes/n, 2)
	r.ReadsPerSwitch = round(sw.Reads/n, 2)
	r.EventCreatesPerSwitch = round(sw.EventCreates/n, 2)
	r.PoolListsDuringSwitch = sw.PoolLists
	r.SwitchRequests = sw.ByVerbResource
	rel := summarize(productRequests(after, mid))
	r.ReleaseWrites, r.ReleaseReads, r.ReleaseRequests = rel.Writes, rel.Reads, rel.ByVerbResource
	r.BackgroundRequests = sw.Background + rel.Background

	wm := diffMetrics(mid.worker, before.worker)
	var acts, locals float64
	r.ActivitiesByType, acts, locals = activitiesRun(wm)
	r.ActivitiesPerSwitch = round(acts/n, 2)
	r.LocalActivitiesPerPass = round(locals/n, 2)
	r.ActivityScheduleToStart = meanMs(wm, "temporal_activity_schedule_to_start_latency_seconds")
	r.WFTaskScheduleToStart = meanMs(wm, "temporal_workflow_task_schedule_to_start_latency_seconds")
	r.StarterSignals = signals(diffMetrics(mid.starter, before.starter))
	r.StarterMetricsDuringSwitch = starterMetrics(diffMetrics(mid.starter, before.starter))
	r.ReleaseSignals = signals(diffMetrics(after.starter, mid.starter))
	_, acts, locals = activitiesRun(diffMetrics(after.worker, mid.worker))
	r.ReleaseActivities = acts + locals
	r.SwitchCPUSeconds = mid.cpu.since(before.cpu)
	r.ReleaseCPU = after.cpu.since(mid.cpu)
	c := r.SwitchCPUSeconds
	r.KubeCPUMsPerSwitch = round(1000*(c["kube-apiserver"]+c["etcd"]+c["worker"]+c["starter"])/n, 1)
	r.TemporalCPUMsPerSwitch = round(1000*c["temporal"]/n, 1)
}

func (r *result) finish() {
	defer func() { r.Targets = judge(r) }()
	if r.Seconds > 0 {
		r.SwitchesPerSecond = round(float64(r.Pools)/r.Seconds, 1)
	}
	if r.APIFloorSeconds > 0 {
		r.RatioAPIFloor = round(r.Seconds/r.APIFloorSeconds, 2)
	}
	if r.TemporalFloorSeconds > 0 {
		r.RatioTemporalFloor = round(r.Seconds/r.TemporalFloorSeconds, 2)
	}
	for _, p := range r.PlainReconciler {
		if r.PlainReconcilerSeconds == 0 || p.Seconds < r.PlainReconcilerSeconds {
			r.PlainReconcilerSeconds = p.Seconds
		}
		if p.MaxConcurrentReconciles == 1 {
			r.PlainReconcilerSecondsSerial = p.Seconds
		}
	}
	if r.PlainReconcilerSeconds > 0 {
		r.RatioPlainReconciler = round(r.Seconds/r.PlainReconcilerSeconds, 2)
	}
}

// activitiesRun counts the activities and the local activities the
// worker's metrics m (a window's) show run, in total and by type (local
// ones as "local <type>").
func activitiesRun(m map[string]float64) (byType map[string]float64, acts, locals float64) {
	byType = map[string]float64{}
	for k, v := range m {
		typ := "?"
		if _, t, ok := strings.Cut(k, "activity_type="); ok {
			typ, _, _ = strings.Cut(t, "|")
		}
		switch {
		case strings.HasPrefix(k, "temporal_activity_execution_latency_seconds_count|"):
			acts += v
			byType[typ] += v
		case strings.HasPrefix(k, "temporal_local_activity_execution_latency_seconds_count|"):
			locals += v
			byType["local "+typ] += v
		}
	}
	return byType, acts, locals
}

// starterMetrics is the product's own metrics (ate_starter_*) in m.
func starterMetrics(m map[string]float64) map[string]float64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(k string, _ float64) bool { return !strings.HasPrefix(k, "ate_starter_") })
	return out
}

func meanMs(m map[string]float64, name string) float64 {
	var sum, count float64
	for k, v := range m {
		switch {
		case k == name+"_sum" || strings.HasPrefix(k, name+"_sum|"):
			sum += v
		case k == name+"_count" || strings.HasPrefix(k, name+"_count|"):
			count += v
		}
	}
	if count == 0 {
		return 0
	}
	return round(1000*sum/count, 1)
}

func signals(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if kind, ok := strings.CutPrefix(k, "ate_starter_signals_total|kind="); ok {
			out[kind] = v
		}
	}
	return out
}

// spreadOf returns the fastest and the slowest Seconds of one size's
// repeats, and records their ratio on each.
func spreadOf(repeats []*result) (fastest, slowest float64) {
	for i, r := range repeats {
		if i == 0 || r.Seconds < fastest {
			fastest = r.Seconds
		}
		slowest = max(slowest, r.Seconds)
	}
	if fastest > 0 {
		for _, r := range repeats {
			r.SlowestOverFastest = round(slowest/fastest, 2)
		}
	}
	return fastest, slowest
}
