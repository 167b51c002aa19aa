package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The recorder: the results as a table on stdout, as JSON
// (test/bench/results/latest.json) and as rows of BENCHMARKS.md's run table.

func writeResults(root, out string, results []*result) error {
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
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}

func printTable(w io.Writer, rs []*result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pools\tseconds\ttrans/sw\tplain s\tplain serial s\tx plain\tkube CPU ms/sw\tTemporal CPU ms/sw\tTemporal floor s\teager floor s\tx Temporal\t"+
		"writes/sw\treads/sw\tevents/sw\tpool LISTs\thist ev/sw\trelease s\troll s\troll release s\troll signals\trestart s\trestart trans/pool\tworker MiB\tworker KB/pool\tstarter KB/pool\tpeak w+s MiB\tload\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%g\t%.1f\t%.2f\t%.2f\t%.2f\t%d\t%.2f\t%.3f\t%.0f\t%.1f\t%.1f\t%.0f\t%.1f\t\n",
			r.Pools, r.Seconds, r.StateTransitionsPerSwitch, r.PlainReconcilerSeconds, r.PlainReconcilerSecondsSerial, r.RatioPlainReconciler,
			r.KubeCPUMsPerSwitch, r.TemporalCPUMsPerSwitch, r.TemporalFloorSeconds, r.TemporalFloorEagerSeconds, r.RatioTemporalFloor,
			r.WritesPerSwitch, r.ReadsPerSwitch, r.EventCreatesPerSwitch, r.PoolListsDuringSwitch, r.HistoryEventsPerSwitch,
			r.ReleaseSeconds, rollOf(r).Seconds, rollOf(r).ReleaseAfterLastMoveSeconds, rollOf(r).ReleaseSignals,
			r.RestartSeconds, r.RestartStateTransitionsPerPool, r.WorkerRSSMiB, r.WorkerKBPerPool, r.StarterKBPerPool, r.RSSMiB, r.Load1)
	}
	_ = tw.Flush()
	printRollouts(w, rs)
}

// printRollouts prints a row per staged rollout of each result (none
// without them).
func printRollouts(w io.Writer, rs []*result) {
	if !slices.ContainsFunc(rs, func(r *result) bool { return len(r.Rollouts) > 0 }) {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pools\tstaged rollout\tsteps\tbake s\tseconds\tx wave\tcompleted s\tstep ends s\tpool LISTs\tconfig LISTs\thist ev/step\ttrans/step\t"+
		"bake req/s\tbake API CPU %\tproblems\t")
	for _, r := range rs {
		for _, ro := range r.Rollouts {
			var percents, ends []string
			for _, p := range ro.Percents {
				percents = append(percents, fmt.Sprintf("%d%%", p))
			}
			for _, s := range ro.Steps {
				ends = append(ends, fmt.Sprintf("%.1f", s.EndSeconds))
			}
			ratio, bakeRate, bakeCPU := "-", "-", "-"
			if ro.RatioToWave > 0 {
				ratio = fmt.Sprintf("%.2f", ro.RatioToWave)
			}
			if b := ro.Bake; b != nil {
				bakeRate, bakeCPU = fmt.Sprintf("%.2f", b.TotalPerSecond), fmt.Sprintf("%.1f", b.CPUPercent["kube-apiserver"])
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%g\t%.2f\t%s\t%.2f\t%s\t%g\t%g\t%.1f\t%.1f\t%s\t%s\t%d\t\n",
				r.Pools, ro.Config, strings.Join(percents, ","), ro.Pause, ro.Seconds, ratio, ro.CompletedSeconds, strings.Join(ends, ","),
				ro.PoolLists, ro.ConfigLists, ro.HistoryEventsPerStep, ro.StateTransitionsPerStep, bakeRate, bakeCPU, len(ro.Problems))
		}
	}
	_ = tw.Flush()
}

// postgresNote starts the note of rows measured on temporal-server on
// PostgreSQL (-temporal postgres), which BENCHMARKS.md lists beside the dev
// server's. Its Temporal CPU is temporal-server's alone: PostgreSQL's
// backends are not counted. clusterNote starts the note of rows measured
// with -cluster: the local cluster's controllers, scheduler and kwok share
// the machine, and the product's Deployments get pods.
const (
	postgresNote = "temporal-server on PostgreSQL (SQL visibility, 4 shards, default dynamic config)."
	clusterNote  = "On the local cluster (controller manager, scheduler, kwok)."
)

// runsMarker precedes the run table in BENCHMARKS.md; rows go right under
// the table's header, newest first.
const runsMarker = "<!-- bench: runs, newest first; `make bench` adds rows here -->"

const runsHeader = "| date (UTC) | commit | pools | seconds | x API floor | x Temporal floor | switches/s | writes/switch | reads/switch | history events/switch | release s | worker+starter peak RSS MiB | state transitions/switch | plain reconciler s (fastest / serial) | x plain | kube CPU ms/switch | restart s | restart transitions/pool | worker RSS MiB at rest | worker / starter KB per pool at rest | create-and-delete: release s after the last move / signals | load | note |\n" +
	"|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n"

func recordRuns(path string, rs []*result, note string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i := strings.Index(doc, runsMarker)
	if i < 0 {
		return fmt.Errorf("%s has no line %q to put the runs under", path, runsMarker)
	}
	head := doc[:i+len(runsMarker)] + "\n\n"
	rest := dropTableHeader(strings.TrimLeft(doc[i+len(runsMarker):], "\n"))
	var rows strings.Builder
	for _, r := range rs {
		date := r.Date
		if t, err := time.Parse(time.RFC3339, r.Date); err == nil {
			date = t.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(&rows, "| %s | %s | %d | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f | %.1f | %.2f | %.0f | %.2f | %.1f / %.1f | %.2f | %.1f | %.2f | %.3f | %.0f | %.1f / %.1f | %.2f / %d | %.1f | %s |\n",
			date, r.Commit, r.Pools, r.Seconds, r.RatioAPIFloor, r.RatioTemporalFloor, r.SwitchesPerSecond,
			r.WritesPerSwitch, r.ReadsPerSwitch, r.HistoryEventsPerSwitch, r.ReleaseSeconds, r.RSSMiB,
			r.StateTransitionsPerSwitch, r.PlainReconcilerSeconds, r.PlainReconcilerSecondsSerial, r.RatioPlainReconciler,
			r.KubeCPUMsPerSwitch, r.RestartSeconds, r.RestartStateTransitionsPerPool, r.WorkerRSSMiB, r.WorkerKBPerPool, r.StarterKBPerPool,
			rollOf(r).ReleaseAfterLastMoveSeconds, rollOf(r).ReleaseSignals, r.Load1, rowNote(r, note))
	}
	return os.WriteFile(path, []byte(head+runsHeader+rows.String()+rest), 0o644)
}

// rowNote is the note of r's row: which repeat it is, the oldest workflow
// task the wave's backlog held, the Temporal CPU per switch, then note.
func rowNote(r *result, note string) string {
	var parts []string
	if r.Repeats > 1 {
		parts = append(parts, fmt.Sprintf("repeat %d/%d (slowest %.2fx the fastest)", r.Repeat, r.Repeats, r.SlowestOverFastest))
	}
	if r.TaskQueue != nil {
		parts = append(parts, fmt.Sprintf("oldest workflow task %.1f s", r.TaskQueue.MaxBacklogAgeSeconds))
	}
	if r.TemporalFloorEagerSeconds > 0 {
		parts = append(parts, fmt.Sprintf("Temporal floor with eager start %.1f s (%.1f s without)", r.TemporalFloorEagerSeconds, r.TemporalFloorSeconds))
	}
	if len(r.Failures) > 0 {
		parts = append(parts, fmt.Sprintf("FAILED %d correctness checks", len(r.Failures)))
	}
	if r.TemporalCPUMsPerSwitch > 0 {
		parts = append(parts, fmt.Sprintf("Temporal CPU %.1f ms/switch", r.TemporalCPUMsPerSwitch))
	}
	if f := r.rolloutFigures; f != nil {
		parts = append(parts, fmt.Sprintf("staged rollout (1%%, 10%%, 100%%) %.1f s (%.2fx the wave), %g pool and %g config LISTs in both rollouts, "+
			"%.2f requests/s and API CPU %.1f%% during the bake", f.RolloutSeconds, f.RolloutRatioToWave, f.RolloutPoolLists, f.RolloutConfigLists,
			f.RolloutBakeRequestsPerSecondTotal, f.RolloutBakeAPICPUPercent))
	}
	if p := r.Pods; p != nil {
		parts = append(parts, fmt.Sprintf("%d pods Ready in %.1f s after a scale-up to %d, %.2f status writes and %.1f ms kube CPU per pool; "+
			"the wave with pods %.1f s (%.2fx, CPU %.2fx the pod-less wave), %d pods replaced",
			p.PodsReady, p.ReadySeconds, p.Replicas, p.StatusWritesPerPool, p.KubeCPUMsPerPool, p.WaveSeconds, p.WaveRatioSeconds, p.WaveRatioCPU, p.PodsReplaced))
	}
	if note != "" {
		parts = append(parts, note)
	}
	return strings.Join(parts, "; ")
}

// dropTableHeader removes the run table's header (this one, or an older
// one with other columns) from the start of the table.
func dropTableHeader(rest string) string {
	if !strings.HasPrefix(rest, "| date (UTC) |") {
		return rest
	}
	for range 2 { // the header line and its alignment line
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[j+1:]
		}
	}
	return rest
}
