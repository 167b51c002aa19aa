package main

// The checker: what the bench judges its numbers against.

// targets are issue 17's goals for the switch, judged on
// this size's numbers; the time and memory ones apply to N=1000 (false
// elsewhere is not a miss).
type targets struct {
	Within30s bool `json:"all_moved_within_30s"`
	// AtMost3Transitions: at most 3 Temporal state transitions per switch,
	// counted (StateTransitionsPerSwitch): the one-task switch.
	AtMost3Transitions bool `json:"at_most_3_state_transitions_per_switch"`
	// Within2_5xPlain: at most 2.5x the faster plain reconciler wave.
	Within2_5xPlain bool `json:"within_2_5x_plain_reconciler"`
	// Within1_5xOwnFloor: at most 1.5x the Temporal floor of the switch's
	// own shape (its workflow code on no-op activities).
	Within1_5xOwnFloor bool `json:"within_1_5x_own_floor"`
	// KubeCPUAtMost40ms: kube-apiserver + etcd + worker + starter CPU per
	// switch.
	KubeCPUAtMost40ms bool `json:"kube_cpu_at_most_40ms_per_switch"`
	// AtMost3Writes: at most 3 writes per switch (claim, confirm, event),
	// of which at most 1 event create, besides the one finalizer patch on the
	// new default that all N switches share (the API floor writes it too:
	// 3 + 1/N is the least a switch can cost); NoPoolList: no LIST of all
	// WorkerPools during the switch.
	AtMost3Writes bool `json:"at_most_3_writes_1_event_per_switch"`
	NoPoolList    bool `json:"no_pool_list_per_switch"`
	// Under300MiB: worker + starter peak RSS.
	Under300MiB    bool `json:"worker_starter_under_300_mib"`
	ReleaseUnder1s bool `json:"release_under_1s"`
	// RestartAlmostFree: a starter restart over N up-to-date pools costs at
	// most 0.01 state transitions per pool (10 for 1000 pools): the bench's
	// reading of "(almost) nothing".
	RestartAlmostFree bool `json:"restart_at_most_0_01_transitions_per_pool"`
	// WorkerUnder150MiB: the worker's RSS at rest after the switch.
	WorkerUnder150MiB bool `json:"worker_rss_under_150_mib"`
	// The previous issue's, kept for comparison.
	WithinTemporalFloor125 bool `json:"within_1_25x_temporal_floor"`
	AtMost40Events         bool `json:"at_most_40_history_events_per_switch"`
}

// judge tells which targets r meets.
func judge(r *result) targets {
	return targets{
		Within30s:              r.Seconds <= 30,
		AtMost3Transitions:     r.StateTransitionsPerSwitch > 0 && r.StateTransitionsPerSwitch <= 3,
		Within2_5xPlain:        r.RatioPlainReconciler > 0 && r.RatioPlainReconciler <= 2.5,
		Within1_5xOwnFloor:     r.RatioTemporalFloor > 0 && r.RatioTemporalFloor <= 1.5,
		KubeCPUAtMost40ms:      r.KubeCPUMsPerSwitch <= 40,
		AtMost3Writes:          r.Pools > 0 && r.WritesPerSwitch <= 3+1/float64(r.Pools)+1e-9 && r.EventCreatesPerSwitch <= 1,
		NoPoolList:             r.PoolListsDuringSwitch == 0,
		Under300MiB:            r.RSSMiB < 300,
		ReleaseUnder1s:         r.ReleaseSeconds < 1,
		RestartAlmostFree:      r.Restart != nil && r.RestartStateTransitionsPerPool <= 0.01,
		WorkerUnder150MiB:      r.WorkerRSSMiB < 150,
		WithinTemporalFloor125: r.RatioTemporalFloor <= 1.25,
		AtMost40Events:         r.HistoryEventsPerSwitch <= 40,
	}
}
