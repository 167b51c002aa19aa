package options

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

func TestWorkerOptions(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    WorkerOptions
		wantErr string
	}{
		{
			name: "built-in defaults",
			want: WorkerOptions{WorkflowTaskPollers: 8, ActivityTaskPollers: 2, MaxConcurrentActivities: 1000, OperatorStartsPerSecond: 20, RolloutStepDeadlineSeconds: 1800, RolloutAfterPollSeconds: 30, StickyWorkflowCacheSize: 10000, WorkflowTaskPollerBehavior: "autoscaling"},
		},
		{
			name: "environment overrides defaults",
			env: map[string]string{
				"ATE_WORKFLOW_TASK_POLLERS": "16", "ATE_ACTIVITY_TASK_POLLERS": "4", "ATE_MAX_CONCURRENT_ACTIVITIES": "50",
			},
			want: WorkerOptions{WorkflowTaskPollers: 16, ActivityTaskPollers: 4, MaxConcurrentActivities: 50, OperatorStartsPerSecond: 20, RolloutStepDeadlineSeconds: 1800, RolloutAfterPollSeconds: 30, StickyWorkflowCacheSize: 10000, WorkflowTaskPollerBehavior: "autoscaling"},
		},
		{
			name: "flags override environment",
			env:  map[string]string{"ATE_WORKFLOW_TASK_POLLERS": "16", "ATE_ACTIVITY_TASK_POLLERS": "4"},
			args: []string{"--workflow-task-pollers=3", "--activity-task-pollers=1", "--max-concurrent-activities=10", "--operator-starts-per-second=5", "--rollout-step-deadline-seconds=60", "--rollout-after-poll-seconds=5", "--sticky-workflow-cache-size=100"},
			want: WorkerOptions{WorkflowTaskPollers: 3, ActivityTaskPollers: 1, MaxConcurrentActivities: 10, OperatorStartsPerSecond: 5, RolloutStepDeadlineSeconds: 60, RolloutAfterPollSeconds: 5, StickyWorkflowCacheSize: 100, WorkflowTaskPollerBehavior: "autoscaling"},
		},
		{
			name: "empty environment variable keeps the default",
			env:  map[string]string{"ATE_WORKFLOW_TASK_POLLERS": ""},
			want: WorkerOptions{WorkflowTaskPollers: 8, ActivityTaskPollers: 2, MaxConcurrentActivities: 1000, OperatorStartsPerSecond: 20, RolloutStepDeadlineSeconds: 1800, RolloutAfterPollSeconds: 30, StickyWorkflowCacheSize: 10000, WorkflowTaskPollerBehavior: "autoscaling"},
		},
		{
			name: "fixed pollers from the environment",
			env:  map[string]string{"ATE_WORKFLOW_TASK_POLLER_BEHAVIOR": "fixed"},
			want: WorkerOptions{WorkflowTaskPollers: 8, ActivityTaskPollers: 2, MaxConcurrentActivities: 1000, OperatorStartsPerSecond: 20, RolloutStepDeadlineSeconds: 1800, RolloutAfterPollSeconds: 30, StickyWorkflowCacheSize: 10000, WorkflowTaskPollerBehavior: "fixed"},
		},
		{
			name: "poller behaviour flag overrides environment",
			env:  map[string]string{"ATE_WORKFLOW_TASK_POLLER_BEHAVIOR": "fixed"},
			args: []string{"--workflow-task-poller-behavior=autoscaling"},
			want: WorkerOptions{WorkflowTaskPollers: 8, ActivityTaskPollers: 2, MaxConcurrentActivities: 1000, OperatorStartsPerSecond: 20, RolloutStepDeadlineSeconds: 1800, RolloutAfterPollSeconds: 30, StickyWorkflowCacheSize: 10000, WorkflowTaskPollerBehavior: "autoscaling"},
		},
		{
			name:    "unknown poller behaviour",
			args:    []string{"--workflow-task-poller-behavior=sticky"},
			wantErr: `--workflow-task-poller-behavior (ATE_WORKFLOW_TASK_POLLER_BEHAVIOR) must be "autoscaling" or "fixed", got "sticky"`,
		},
		{
			name:    "an environment variable that is not a number",
			env:     map[string]string{"ATE_ACTIVITY_TASK_POLLERS": "many"},
			wantErr: `ATE_ACTIVITY_TASK_POLLERS="many" is not a number`,
		},
		{
			// The SDK panics on 1: it alternates polls between the sticky
			// and the shared queue.
			name:    "one workflow task poller",
			args:    []string{"--workflow-task-pollers=1"},
			wantErr: "--workflow-task-pollers (ATE_WORKFLOW_TASK_POLLERS) must be at least 2, got 1",
		},
		{
			name:    "no activity task poller",
			env:     map[string]string{"ATE_ACTIVITY_TASK_POLLERS": "0"},
			wantErr: "--activity-task-pollers (ATE_ACTIVITY_TASK_POLLERS) must be at least 1, got 0",
		},
		{
			name:    "no operator pace",
			args:    []string{"--operator-starts-per-second=0"},
			wantErr: "--operator-starts-per-second (ATE_OPERATOR_STARTS_PER_SECOND) must be at least 1, got 0",
		},
		{
			name:    "a negative operator pace",
			env:     map[string]string{"ATE_OPERATOR_STARTS_PER_SECOND": "-5"},
			wantErr: "--operator-starts-per-second (ATE_OPERATOR_STARTS_PER_SECOND) must be at least 1, got -5",
		},
		{
			name:    "an operator pace that is not a number",
			env:     map[string]string{"ATE_OPERATOR_STARTS_PER_SECOND": "fast"},
			wantErr: `ATE_OPERATOR_STARTS_PER_SECOND="fast" is not a number`,
		},
		{
			name:    "a negative sticky cache",
			env:     map[string]string{"ATE_STICKY_WORKFLOW_CACHE_SIZE": "-1"},
			wantErr: "--sticky-workflow-cache-size (ATE_STICKY_WORKFLOW_CACHE_SIZE) must be at least 0, got -1",
		},
		{
			name:    "no activity slot",
			args:    []string{"--max-concurrent-activities=0"},
			wantErr: "--max-concurrent-activities (ATE_MAX_CONCURRENT_ACTIVITIES) must be at least 1, got 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			clearWorkerEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			// Bound next to the shared options, as the worker binds them.
			var o Options
			var w WorkerOptions
			fs := flag.NewFlagSet("worker", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			w.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			err := w.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			w.envErr = nil
			require.Equal(t, tt.want, w)
		})
	}
}

func TestDefaultWorkerOptionsAreTheFlagDefaults(t *testing.T) {
	clearWorkerEnv(t)
	var w WorkerOptions
	w.BindFlags(flag.NewFlagSet("worker", flag.ContinueOnError))
	require.Equal(t, DefaultWorkerOptions(), w)
}

func TestWorkerOptionsApply(t *testing.T) {
	tests := []struct {
		behavior string
		want     worker.Options
	}{
		{PollerFixed, worker.Options{
			Identity:                           "kept",
			MaxConcurrentWorkflowTaskPollers:   8,
			MaxConcurrentActivityTaskPollers:   3,
			MaxConcurrentActivityExecutionSize: 100,
		}},
		{PollerAutoscaling, worker.Options{
			Identity: "kept",
			WorkflowTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{
				InitialNumberOfPollers: 8, MinimumNumberOfPollers: 2, MaximumNumberOfPollers: 8,
			}),
			MaxConcurrentActivityTaskPollers:   3,
			MaxConcurrentActivityExecutionSize: 100,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.behavior, func(t *testing.T) {
			w := WorkerOptions{WorkflowTaskPollers: 8, ActivityTaskPollers: 3, MaxConcurrentActivities: 100, WorkflowTaskPollerBehavior: tt.behavior}
			// Set beforehand, as a caller might: the two workflow
			// poller settings are exclusive, so Apply clears the other.
			opts := worker.Options{Identity: "kept", MaxConcurrentWorkflowTaskPollers: 2,
				WorkflowTaskPollerBehavior: worker.NewPollerBehaviorSimpleMaximum(worker.PollerBehaviorSimpleMaximumOptions{MaximumNumberOfPollers: 2})}
			w.Apply(&opts)
			require.Equal(t, tt.want, opts)
		})
	}
}

func clearWorkerEnv(t *testing.T) {
	t.Helper()
	for _, s := range workerSettings {
		t.Setenv(s.env, "") // restored after the test
	}
	t.Setenv(pollerBehaviorEnv, "")
	for _, p := range prometheusSettings {
		t.Setenv(p.env, "")
	}
}
