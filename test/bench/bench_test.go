package main

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	rs := []*result{{Seconds: 20, Repeat: 1, Repeats: 3}, {Seconds: 26, Repeat: 2, Repeats: 3}, {Seconds: 22, Repeat: 3, Repeats: 3,
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
