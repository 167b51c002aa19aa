package main

import (
	"sync"
	"time"

	tclient "go.temporal.io/sdk/client"
)

// latencies is a client.MetricsHandler for the floor's worker. It keeps the
// mean schedule-to-start latencies, to compare with the product worker's,
// and counts the workflow task completions the worker reported, so the
// bench can wait for the pool workflows' first tasks to be done before it
// starts the clock.
type latencies struct {
	mu          sync.Mutex
	sum         map[string]time.Duration
	n           map[string]int
	completions int
}

func newLatencies() *latencies {
	return &latencies{sum: map[string]time.Duration{}, n: map[string]int{}}
}

// tagged is the handler with the tags a metric was asked for with.
type tagged struct {
	l         *latencies
	operation string
}

const respondCompleted = "RespondWorkflowTaskCompleted"

func (l *latencies) WithTags(tags map[string]string) tclient.MetricsHandler {
	return tagged{l: l}.WithTags(tags)
}
func (l *latencies) Counter(name string) tclient.MetricsCounter { return tagged{l: l}.Counter(name) }
func (l *latencies) Gauge(name string) tclient.MetricsGauge     { return tagged{l: l}.Gauge(name) }
func (l *latencies) Timer(name string) tclient.MetricsTimer     { return tagged{l: l}.Timer(name) }

func (t tagged) WithTags(tags map[string]string) tclient.MetricsHandler {
	if op, ok := tags["operation"]; ok {
		t.operation = op
	}
	return t
}

func (t tagged) Counter(string) tclient.MetricsCounter { return tclient.MetricsNopHandler.Counter("") }
func (t tagged) Gauge(string) tclient.MetricsGauge     { return tclient.MetricsNopHandler.Gauge("") }

func (t tagged) Timer(name string) tclient.MetricsTimer {
	l := t.l
	switch {
	case name == "temporal_request_latency" && t.operation == respondCompleted:
		// Recorded when the server has answered the completion.
		return timerFunc(func(time.Duration) {
			l.mu.Lock()
			l.completions++
			l.mu.Unlock()
		})
	case name == "temporal_activity_schedule_to_start_latency" || name == "temporal_workflow_task_schedule_to_start_latency":
		return timerFunc(func(d time.Duration) {
			l.mu.Lock()
			l.sum[name] += d
			l.n[name]++
			l.mu.Unlock()
		})
	}
	return tclient.MetricsNopHandler.Timer(name)
}

// workflowTaskCompletions is how many workflow task completions the
// server has acknowledged.
func (l *latencies) workflowTaskCompletions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.completions
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
