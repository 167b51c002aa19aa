package options

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/promquery"
)

// WorkerOptions tunes the worker binary's Temporal worker. Like Options,
// every flag defaults from an environment variable, then from a built-in
// default. The starter runs no Temporal worker and does not take them.
type WorkerOptions struct {
	// WorkflowTaskPollers is the number of concurrent workflow task polls:
	// the most the autoscaling pollers open, or all of them when fixed.
	WorkflowTaskPollers int
	// WorkflowTaskPollerBehavior is PollerAutoscaling (the default) or
	// PollerFixed (docs/decisions/0006-wave-stall.md).
	WorkflowTaskPollerBehavior string
	// ActivityTaskPollers is the number of concurrent activity task polls.
	ActivityTaskPollers int
	// MaxConcurrentActivities bounds the activities the worker runs at once,
	// and so the requests it makes to the API server at once.
	MaxConcurrentActivities int
	// OperatorStartsPerSecond paces the signal-with-starts the operator
	// workflow's requests send (docs/operating-with-the-cli.md).
	OperatorStartsPerSecond int
	// StickyWorkflowCacheSize is how many workflow executions the worker
	// keeps in memory between their workflow tasks (the SDK's sticky
	// cache, process-wide); 0 keeps none and polls only the shared queue
	// (docs/decisions/0016-temporal-transport.md).
	StickyWorkflowCacheSize int
	// RolloutStepDeadlineSeconds is how long a staged rollout's step may
	// take for its pools to move and be Available before the rollout halts.
	RolloutStepDeadlineSeconds int
	// Prometheus is the Prometheus the rollout analysis queries; its URL
	// empty: none (promquery.New gives no client).
	Prometheus promquery.Config

	// RolloutAfterPollSeconds is how often a staged rollout waiting for
	// other clusters (spec.rollout.after) reads their rollouts again.
	RolloutAfterPollSeconds int

	// envErr is an environment variable that is not a number, reported by
	// Validate (BindFlags cannot fail).
	envErr error
}

// The workflow task poller behaviours.
const (
	// PollerAutoscaling is the SDK's autoscaling poller behaviour: it keeps
	// at least one poll on the shared (normal) queue at all times, so new
	// workflows' first tasks are always being polled for.
	PollerAutoscaling = "autoscaling"
	// PollerFixed is the SDK's fixed ("simple maximum") behaviour, where
	// every poller picks a queue per poll. After a sticky poll that hinted
	// a backlog every poller goes to the sticky queue and stays there until
	// a long poll expires (a minute), while new workflows wait on the
	// shared queue: the wave stall of docs/decisions/0006-wave-stall.md.
	// Kept to measure against.
	PollerFixed = "fixed"
)

// Defaults of the worker settings.
const (
	// DefaultWorkflowTaskPollerBehavior: see PollerAutoscaling.
	DefaultWorkflowTaskPollerBehavior = PollerAutoscaling
	// MinimumAutoscalingPollers is the fewest workflow task polls the
	// autoscaling behaviour scales down to: one on each queue.
	MinimumAutoscalingPollers = 2
	// DefaultWorkflowTaskPollers is above the SDK's 2: a workflow task that
	// runs local activities holds its poller until they are done, and with
	// 2 pollers the local-activity switch shape left the server idle while
	// workflow tasks waited (BENCHMARKS.md: 152 s against 61 s for 1000
	// pools with 16). For the current shape more pollers are within the
	// noise, and an idle poll costs one long-poll request.
	DefaultWorkflowTaskPollers = 8
	// DefaultActivityTaskPollers is the SDK's: no run measured a gain from
	// more (the server, not the pollers, was the limit).
	DefaultActivityTaskPollers = 2
	// DefaultMaxConcurrentActivities is the SDK's; runs reached at most 22.
	DefaultMaxConcurrentActivities = 1000
	// DefaultOperatorStartsPerSecond: a third of the switches a second
	// the bench's 2-core stack sustains (about 60), so a new default's
	// wave keeps most of the capacity while an operator's class-wide
	// request runs (docs/decisions/0016-temporal-transport.md); 10,000
	// pools take about eight minutes.
	DefaultOperatorStartsPerSecond = 20
	// DefaultRolloutStepDeadlineSeconds: half an hour for a step's pools to
	// move and become Available; a switch takes seconds, so this is about
	// workers that do not become ready.
	DefaultRolloutStepDeadlineSeconds = 1800
	// DefaultRolloutAfterPollSeconds: a rollout waiting for other clusters
	// begins at most this long after the last of them completed (or its
	// bake ended); each read is a describe and at most a query per cluster
	// on Temporal, so a fleet of waiting rollouts costs little.
	DefaultRolloutAfterPollSeconds = 30
	// DefaultStickyWorkflowCacheSize is the SDK's. Without a cache the
	// bench's wave was within the noise of it, and a workflow task whose
	// local activities outlive its deadline (the task is heartbeated) is
	// replayed from history on the next task, running its unfinished steps
	// again: the steps allow it, but the crash tests were not designed
	// around it (docs/decisions/0016-temporal-transport.md).
	DefaultStickyWorkflowCacheSize = 10000
)

var workerSettings = []intSetting[WorkerOptions]{
	{"workflow-task-pollers", "ATE_WORKFLOW_TASK_POLLERS", DefaultWorkflowTaskPollers, 2,
		"concurrent workflow task polls of the Temporal worker (at least 2: the SDK alternates them between the sticky and the shared queue)",
		func(o *WorkerOptions) *int { return &o.WorkflowTaskPollers }},
	{"activity-task-pollers", "ATE_ACTIVITY_TASK_POLLERS", DefaultActivityTaskPollers, 1,
		"concurrent activity task polls of the Temporal worker",
		func(o *WorkerOptions) *int { return &o.ActivityTaskPollers }},
	{"max-concurrent-activities", "ATE_MAX_CONCURRENT_ACTIVITIES", DefaultMaxConcurrentActivities, 1,
		"activities the worker runs at once, at most",
		func(o *WorkerOptions) *int { return &o.MaxConcurrentActivities }},
	{"operator-starts-per-second", "ATE_OPERATOR_STARTS_PER_SECOND", DefaultOperatorStartsPerSecond, 1,
		"switch (or release) signal-with-starts per second an operator's request to the operator workflow sends, at most",
		func(o *WorkerOptions) *int { return &o.OperatorStartsPerSecond }},
	{"sticky-workflow-cache-size", "ATE_STICKY_WORKFLOW_CACHE_SIZE", DefaultStickyWorkflowCacheSize, 0,
		"workflow executions kept in memory between their workflow tasks (the SDK's sticky cache, its default size); 0: none, every task polled from the shared queue",
		func(o *WorkerOptions) *int { return &o.StickyWorkflowCacheSize }},
	{"rollout-step-deadline-seconds", "ATE_ROLLOUT_STEP_DEADLINE_SECONDS", DefaultRolloutStepDeadlineSeconds, 1,
		"seconds a staged rollout's step may take for its pools to move and be Available before the rollout halts",
		func(o *WorkerOptions) *int { return &o.RolloutStepDeadlineSeconds }},
	{"rollout-after-poll-seconds", "ATE_ROLLOUT_AFTER_POLL_SECONDS", DefaultRolloutAfterPollSeconds, 1,
		"seconds between the reads, through Temporal, of the other clusters' rollouts a staged rollout's first step waits for (spec.rollout.after)",
		func(o *WorkerOptions) *int { return &o.RolloutAfterPollSeconds }},
}

// prometheusSettings are the worker's Prometheus connection: strings with
// no built-in default, each from its flag, else its environment variable.
// The starter queries no Prometheus and does not take them.
var prometheusSettings = []struct {
	flag, env, usage string
	dst              func(*promquery.Config) *string
}{
	{"prometheus-url", "PROMETHEUS_URL",
		"URL of the Prometheus the rollout analysis queries, http(s)://host:port[/prefix]; empty: none",
		func(c *promquery.Config) *string { return &c.URL }},
	{"prometheus-bearer-token-file", "PROMETHEUS_BEARER_TOKEN_FILE",
		"file of a bearer token sent to --prometheus-url, read on every query so that a rotated token is used; empty: none",
		func(c *promquery.Config) *string { return &c.BearerTokenFile }},
	{"prometheus-ca-file", "PROMETHEUS_CA_FILE",
		"PEM bundle of the CAs that sign an https --prometheus-url's certificate, read at start; empty: the system's roots",
		func(c *promquery.Config) *string { return &c.CAFile }},
}

// pollerBehaviorFlag and pollerBehaviorEnv name the poller behaviour
// setting.
const (
	pollerBehaviorFlag = "workflow-task-poller-behavior"
	pollerBehaviorEnv  = "ATE_WORKFLOW_TASK_POLLER_BEHAVIOR"
)

// DefaultWorkerOptions returns the built-in defaults, as a worker started
// with no flag and no environment runs.
func DefaultWorkerOptions() WorkerOptions {
	var o WorkerOptions
	for _, s := range workerSettings {
		*s.dst(&o) = s.def
	}
	o.WorkflowTaskPollerBehavior = DefaultWorkflowTaskPollerBehavior
	return o
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable, then from its built-in default.
func (o *WorkerOptions) BindFlags(fs *flag.FlagSet) {
	o.envErr = bindInts(fs, o, workerSettings)
	behavior := DefaultWorkflowTaskPollerBehavior
	if v, ok := os.LookupEnv(pollerBehaviorEnv); ok && v != "" {
		behavior = v
	}
	fs.StringVar(&o.WorkflowTaskPollerBehavior, pollerBehaviorFlag, behavior,
		fmt.Sprintf("how the workflow task pollers are run: %q (keeps a poll on the shared queue, scaling between %d and --workflow-task-pollers) or %q (always --workflow-task-pollers, each choosing its queue per poll) (env %s)",
			PollerAutoscaling, MinimumAutoscalingPollers, PollerFixed, pollerBehaviorEnv))
	for _, p := range prometheusSettings {
		fs.StringVar(p.dst(&o.Prometheus), p.flag, os.Getenv(p.env), fmt.Sprintf("%s (env %s)", p.usage, p.env))
	}
}

// Validate checks the settings.
func (o *WorkerOptions) Validate() error {
	errs := append([]error{o.envErr}, validateInts(o, workerSettings)...)
	if b := o.WorkflowTaskPollerBehavior; b != PollerAutoscaling && b != PollerFixed {
		errs = append(errs, fmt.Errorf("--%s (%s) must be %q or %q, got %q", pollerBehaviorFlag, pollerBehaviorEnv, PollerAutoscaling, PollerFixed, b))
	}
	// Its files are read now, so a missing Secret mount fails the start
	// rather than the first analysis.
	errs = append(errs, o.Prometheus.Validate())
	return errors.Join(errs...)
}

// Apply sets the settings on the Temporal worker's options, and the
// process-wide sticky cache size (before the first worker starts).
func (o *WorkerOptions) Apply(w *worker.Options) {
	worker.SetStickyWorkflowCacheSize(o.StickyWorkflowCacheSize)
	w.MaxConcurrentWorkflowTaskPollers, w.WorkflowTaskPollerBehavior = 0, nil
	if o.WorkflowTaskPollerBehavior == PollerFixed {
		w.MaxConcurrentWorkflowTaskPollers = o.WorkflowTaskPollers
	} else {
		w.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{
			InitialNumberOfPollers: o.WorkflowTaskPollers,
			MinimumNumberOfPollers: MinimumAutoscalingPollers,
			MaximumNumberOfPollers: o.WorkflowTaskPollers,
		})
	}
	w.MaxConcurrentActivityTaskPollers = o.ActivityTaskPollers
	w.MaxConcurrentActivityExecutionSize = o.MaxConcurrentActivities
}
