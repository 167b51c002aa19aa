package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestSwitchedTo(t *testing.T) {
	for note, want := range map[string]string{
		`sandbox class "gvisor" switched from SandboxConfig "gvisor-default" to "gvisor-default-v2"`: "gvisor-default-v2",
		`sandbox class "gvisor" switched from SandboxConfig "a to b" to "c"`:                         "c",
		`sandbox class "gvisor" uses SandboxConfig "x"`:                                              "",
	} {
		got, ok := switchedTo(note)
		if got != want || ok != (want != "") {
			t.Errorf("switchedTo(%q) = %q, %v; want %q", note, got, ok, want)
		}
	}
}

func TestRecordRunsReplacesAnOlderHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	doc := "intro\n\n" + runsMarker + "\n\n| date (UTC) | commit | old |\n|---|---|---|\n| 2026-01-01 | abc | 1 |\n\nafter\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &result{Pools: 10, Date: "2026-12-01T00:00:00Z", Commit: "def"}
	if err := recordRuns(path, []*result{r}, "n"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Count(got, "| date (UTC) |") != 1 || !strings.Contains(got, runsHeader+"| 2026-12-01 00:00 | def | 10 |") ||
		!strings.Contains(got, "| 2026-01-01 | abc | 1 |\n\nafter\n") {
		t.Fatalf("recorded doc:\n%s", got)
	}
	if cells := strings.Count(strings.Split(runsHeader, "\n")[0], "|"); cells != strings.Count(strings.Split(got, "\n")[6], "|") {
		t.Errorf("the new row has not as many cells as the header:\n%s", got)
	}
}

func TestSpread(t *testing.T) {
	xs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if got := spread(xs, 20); len(got) != 10 {
		t.Errorf("spread of 10 into 20 = %v", got)
	}
	if got := spread(xs, 5); len(got) != 5 || got[0] != 0 || got[4] != 8 {
		t.Errorf("spread of 10 into 5 = %v", got)
	}
}

func TestRepeatsSpreadAndNote(t *testing.T) {
	rs := []*result{{waveTimes: waveTimes{Seconds: 20}, Repeat: 1, Repeats: 3}, {waveTimes: waveTimes{Seconds: 26}, Repeat: 2, Repeats: 3}, {waveTimes: waveTimes{Seconds: 22}, Repeat: 3, Repeats: 3,
		TaskQueue: &taskQueueStats{MaxBacklogAgeSeconds: 4.25}, TemporalCPUMsPerSwitch: 14.7}}
	fastest, slowest := spreadOf(rs)
	if fastest != 20 || slowest != 26 {
		t.Fatalf("spreadOf = %v, %v; want 20, 26", fastest, slowest)
	}
	for _, r := range rs {
		if r.SlowestOverFastest != 1.3 {
			t.Errorf("repeat %d: slowest over fastest %v, want 1.3", r.Repeat, r.SlowestOverFastest)
		}
	}
	want := "repeat 3/3 (slowest 1.30x the fastest); oldest workflow task 4.2 s; Temporal CPU 14.7 ms/switch; on the dev server"
	if got := rowNote(rs[2], "on the dev server"); got != want {
		t.Errorf("rowNote = %q, want %q", got, want)
	}
	if got := rowNote(&result{Repeats: 1}, "n"); got != "n" {
		t.Errorf("rowNote of a single run = %q, want %q", got, "n")
	}
}

// TestProcessMetrics reads the series the bench sums from a process's
// /metrics: histograms as their _count and _sum, by the labels asked for,
// and nothing outside scrapedPrefixes.
func TestProcessMetrics(t *testing.T) {
	const body = `# TYPE temporal_activity_execution_latency_seconds histogram
temporal_activity_execution_latency_seconds_bucket{activity_type="Claim",le="+Inf"} 3
temporal_activity_execution_latency_seconds_sum{activity_type="Claim"} 0.5
temporal_activity_execution_latency_seconds_count{activity_type="Claim"} 3
temporal_activity_execution_latency_seconds_bucket{activity_type="Confirm",le="+Inf"} 2
temporal_activity_execution_latency_seconds_sum{activity_type="Confirm"} 0.25
temporal_activity_execution_latency_seconds_count{activity_type="Confirm"} 2
# TYPE ate_starter_signals_total counter
ate_starter_signals_total{kind="pool"} 4
ate_starter_signals_total{kind="config"} 1
# TYPE temporal_worker_task_slots_used gauge
temporal_worker_task_slots_used{worker_type="ActivityWorker"} 7
# TYPE go_goroutines gauge
go_goroutines 12
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		keep []string
		want map[string]float64
	}{
		{nil, map[string]float64{
			"temporal_activity_execution_latency_seconds_count": 5, "temporal_activity_execution_latency_seconds_sum": 0.75,
			"ate_starter_signals_total": 5, "temporal_worker_task_slots_used": 7,
		}},
		{[]string{"activity_type", "kind"}, map[string]float64{
			"temporal_activity_execution_latency_seconds_count|activity_type=Claim": 3, "temporal_activity_execution_latency_seconds_sum|activity_type=Claim": 0.5,
			"temporal_activity_execution_latency_seconds_count|activity_type=Confirm": 2, "temporal_activity_execution_latency_seconds_sum|activity_type=Confirm": 0.25,
			"ate_starter_signals_total|kind=pool": 4, "ate_starter_signals_total|kind=config": 1, "temporal_worker_task_slots_used": 7,
		}},
	} {
		got, err := processMetrics(context.Background(), addr, tc.keep...)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("processMetrics(keep %v) = %v, want %v", tc.keep, got, tc.want)
		}
	}
}

// TestWatcherCountsEventsByPool: SandboxConfigSwitched events are counted
// by the pool they regard and the config they name; other reasons, kinds
// and notes are not.
func TestWatcherCountsEventsByPool(t *testing.T) {
	w := &watcher{events: map[string]int{}, perPool: map[string]map[string]int{}, eventAt: map[string]map[string]time.Time{}}
	ev := func(reason, kind, ns, name, to string) *eventsv1.Event {
		return &eventsv1.Event{Reason: reason, Regarding: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name},
			Note: fmt.Sprintf(`sandbox class "gvisor" switched from SandboxConfig "a" to %q`, to)}
	}
	sw := v1alpha1.EventReasonSandboxConfigSwitched
	for _, e := range []*eventsv1.Event{
		ev(sw, "WorkerPool", "ns", "p1", "v2"), ev(sw, "WorkerPool", "ns", "p1", "v2"), ev(sw, "WorkerPool", "ns", "p2", "v2"),
		ev(sw, "WorkerPool", "ns", "p1", "v3"), ev("BenchAPIFloor", "WorkerPool", "ns", "p3", "v2"), ev(sw, "Deployment", "ns", "p4", "v2"),
	} {
		w.event(e)
	}
	require.Equal(t, map[string]int{"ns/p1": 2, "ns/p2": 1}, w.perPool["v2"])
	require.Equal(t, map[string]int{"ns/p1": 1}, w.perPool["v3"])
	require.Equal(t, 3, w.eventsTo("v2"))
}

func TestCheckWave(t *testing.T) {
	on := map[string]string{"ns/a": "new", "ns/b": "new"}
	one := map[string]int{"ns/a": 1, "ns/b": 1}
	for _, tc := range []struct {
		name    string
		current map[string]string
		events  map[string]int
		gone    bool
		want    []string
	}{
		{name: "all good", current: on, events: one, gone: true},
		{name: "a pool elsewhere", current: map[string]string{"ns/a": "new", "ns/b": "old"}, events: one, gone: true,
			want: []string{"1 of 2 pools on new (Resolved, no claim); others: ns/b on old"}},
		{name: "a pool missing", current: map[string]string{"ns/a": "new"}, events: one, gone: true,
			want: []string{"1 of 2 pools on new (Resolved, no claim); others: none"}},
		{name: "a duplicate event", current: on, events: map[string]int{"ns/a": 2, "ns/b": 1}, gone: true,
			want: []string{"2 of 2 pools have SandboxConfigSwitched events to new; not exactly one: ns/a has 2"}},
		{name: "an event missing, the old default still there", current: on, events: map[string]int{"ns/a": 1},
			want: []string{"1 of 2 pools have SandboxConfigSwitched events to new; not exactly one: none",
				"the old default old is not gone after its deletion"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, checkWave("new", "old", 2, tc.current, tc.events, tc.gone))
		})
	}
}

func TestJudge(t *testing.T) {
	good := &result{Pools: 10000, Roll: &rollRun{ReleaseAfterLastMoveSeconds: 4.9, ReleaseSignals: 3},
		WorkerRestRSSMiB: 300, WorkerKBPerPool: 25, RatioPlainReconciler: 3}
	v := judge(good)
	require.Equal(t, met, v["correct: every pool on the new default, one SandboxConfigSwitched each, old default gone"])
	require.Equal(t, met, v["create-and-delete: old default gone within 5 s of the last move"])
	require.Equal(t, met, v["create-and-delete: at most 3 signals in the old default's release (all runs)"])
	require.Equal(t, met, v["worker RSS at rest at most base + 25 KB per pool"])
	require.Equal(t, missed, v["within 2.5x the plain reconciler"], "3x at N=10,000")
	require.Equal(t, notJudged, v["within 2.2x the plain reconciler"], "judged at N=1000 only")
	require.Equal(t, met, judge(&result{Pools: 1000, RatioPlainReconciler: 2.2})["within 2.2x the plain reconciler"])
	require.Equal(t, missed, judge(&result{Pools: 1000, RatioPlainReconciler: 2.21})["within 2.2x the plain reconciler"])
	require.Equal(t, notJudged, judge(&result{Pools: 1000, RatioPlainReconciler: 2.21})["within 2.5x the plain reconciler"], "10,000's")
	require.Equal(t, notJudged, v["starter RSS at rest per pool (no target)"])

	bad := &result{Pools: 10000, Failures: []string{"x"}, Roll: &rollRun{ReleaseAfterLastMoveSeconds: 5.1, ReleaseSignals: 4},
		WorkerRestRSSMiB: 300, WorkerKBPerPool: 25.1}
	v = judge(bad)
	for _, name := range []string{"correct: every pool on the new default, one SandboxConfigSwitched each, old default gone",
		"create-and-delete: old default gone within 5 s of the last move",
		"create-and-delete: at most 3 signals in the old default's release (all runs)",
		"worker RSS at rest at most base + 25 KB per pool"} {
		require.Equal(t, missed, v[name], name)
	}
	require.Equal(t, missed, judge(&result{Pools: 1000})["create-and-delete: old default gone within 5 s of the last move"], "no flow measured")
	require.Equal(t, notJudged, judge(&result{Pools: 1000, WorkerKBPerPool: 99})["worker RSS at rest at most base + 25 KB per pool"])
}

func TestJudgeRun(t *testing.T) {
	rs := []*result{
		{Pools: 1000, SlowestOverFastest: 1.2, RatioPlainReconciler: 2.4, TemporalCPUMsPerSwitch: 10, KubeCPUMsPerSwitch: 20},
		{Pools: 1000, SlowestOverFastest: 1.2, RatioPlainReconciler: 2.6, TemporalCPUMsPerSwitch: 12, KubeCPUMsPerSwitch: 20},
		{Pools: 1000, SlowestOverFastest: 1.2, RatioPlainReconciler: 2.5, TemporalCPUMsPerSwitch: 11, KubeCPUMsPerSwitch: 30},
		{Pools: 10000, RatioPlainReconciler: 4, TemporalCPUMsPerSwitch: 13.75, KubeCPUMsPerSwitch: 26},
	}
	require.Equal(t, []runVerdict{
		{Target: "N=1000: slowest of 3 repeats over the fastest", Value: 1.2, Limit: 1.3, Verdict: met},
		{Target: "N=1000: ratio to the plain reconciler, median of 3 run(s)", Value: 2.5, Limit: 2.2, Verdict: missed},
		{Target: "N=10000: ratio to the plain reconciler, median of 1 run(s)", Value: 4, Limit: 2.5, Verdict: missed},
		{Target: "Temporal CPU per switch at N=10000 over N=1000", Value: 1.25, Limit: 1.25, Verdict: met},
		{Target: "Kubernetes-side CPU per switch at N=10000 over N=1000", Value: 1.3, Limit: 1.25, Verdict: missed},
	}, judgeRun(rs))
	require.Equal(t, met, judgeRun([]*result{{Pools: 1000, RatioPlainReconciler: 2.1}})[0].Verdict)
	require.Equal(t, notJudged, judgeRun([]*result{{Pools: 100, RatioPlainReconciler: 2.1}})[0].Verdict)
	small := judgeRun([]*result{{Pools: 10, KubeCPUMsPerSwitch: 10}, {Pools: 100, KubeCPUMsPerSwitch: 5}})
	require.Equal(t, runVerdict{Target: "Kubernetes-side CPU per switch at N=100 over N=10", Value: 0.5, Limit: 1.25, Verdict: notJudged}, small[len(small)-1])
}
