package main

import (
	"sync"
	"time"

	tclient "go.temporal.io/sdk/client"
)

// latencies is a client.MetricsHandler for the floor's worker. It keeps the
// mean schedule-to-start latencies, to compare with the product worker's,
// and calls switched for each switch the workflows count as ended (their
// ate_switches counter, which the SDK does not report while replaying).
type latencies struct {
	mu       sync.Mutex
	sum      map[string]time.Duration
	n        map[string]int
	switched func()
}

func newLatencies(switched func()) *latencies {
	return &latencies{sum: map[string]time.Duration{}, n: map[string]int{}, switched: switched}
}

// WithTags returns l: it keeps its sums whatever the tags.
func (l *latencies) WithTags(map[string]string) tclient.MetricsHandler { return l }

func (l *latencies) Counter(name string) tclient.MetricsCounter {
	if name == "ate_switches" {
		return counterFunc(func(int64) { l.switched() })
	}
	return tclient.MetricsNopHandler.Counter(name)
}

func (l *latencies) Gauge(name string) tclient.MetricsGauge {
	return tclient.MetricsNopHandler.Gauge(name)
}

func (l *latencies) Timer(name string) tclient.MetricsTimer {
	if name == "temporal_activity_schedule_to_start_latency" || name == "temporal_workflow_task_schedule_to_start_latency" {
		return timerFunc(func(d time.Duration) {
			l.mu.Lock()
			l.sum[name] += d
			l.n[name]++
			l.mu.Unlock()
		})
	}
	return tclient.MetricsNopHandler.Timer(name)
}

func (l *latencies) meanMs(name string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[name] == 0 {
		return 0
	}
	return round(float64(l.sum[name].Microseconds())/1000/float64(l.n[name]), 1)
}

func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.sum)
	clear(l.n)
}

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }
