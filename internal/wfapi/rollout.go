package wfapi

import (
	"encoding/json"

	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"ate.dev/orchestrator/internal/rolloutplan"
	"ate.dev/orchestrator/internal/searchattr"
)

// RolloutWorkflow is the staged rollout of a class default: one execution
// per rolling-out SandboxConfig (RolloutWorkflowID).
const RolloutWorkflow = "SandboxConfigRollout"

// The rollout workflow's signals and query. The starter sends pause and
// resume (with the config's generation) when spec.rollout.paused changes;
// an operator sends them with no payload from the CLI, which holds or
// resumes the rollout until the next change of spec.rollout.paused.
const (
	// SignalPause holds a rollout: no more pools are admitted.
	SignalPause = "pause"
	// SignalResume resumes a paused or halted rollout.
	SignalResume = "resume"
	// QueryPlan returns a RolloutPlan: the pools of each step and which
	// have moved.
	QueryPlan = "plan"
)

// RolloutWorkflowID is the ID of the rollout workflow of a SandboxConfig of
// the cluster.
func (c Cluster) RolloutWorkflowID(config string) string {
	return fmt.Sprintf("%s/sandboxconfig/%s/rollout", c, config)
}

// CheckRolloutID reports an error unless id is the rollout workflow ID of
// config in the cluster it names: a rollout acts on the config its ID
// names only, whoever started it with whatever input.
func CheckRolloutID(id, config string) error {
	return ParseWorkflowID(id).CheckRollout(config)
}

// RolloutInput is the rollout workflow's input: the config it rolls out.
// Everything else (steps, gate, paused) is read live at each step.
type RolloutInput struct {
	Config string `json:"config"`
}

// RolloutSignal is the payload of the starter's pause and resume: the
// config generation whose spec.rollout.paused it carries. An operator's
// signal has none (Generation 0).
type RolloutSignal struct {
	Generation int64 `json:"generation,omitempty"`
}

// RolloutResult is how a rollout ended: its final phase and why.
type RolloutResult struct {
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
}

// GateInput is the input of a rollout's gate workflow: the config, the
// step just done and the pools it admitted.
type GateInput struct {
	Config string   `json:"config"`
	Step   int32    `json:"step"`
	Pools  []string `json:"pools"`
	// Input is spec.rollout.gate.input, the user's own JSON, as written.
	Input json.RawMessage `json:"input,omitempty"`
}

// RolloutPlan is the answer of the plan query: rolloutplan.Plan, which
// previews share; it lives there so that a client (the kubectl plugin)
// reads plans without linking the Temporal SDK.
type RolloutPlan = rolloutplan.Plan

// RolloutPlanStep is a step of a RolloutPlan.
type RolloutPlanStep = rolloutplan.Step

// StartRollout starts the rollout workflow of a config unless it runs
// (USE_EXISTING: a start while it runs changes nothing).
func StartRollout(ctx context.Context, c client.Client, scope Scope, config string) error {
	id := scope.Cluster.RolloutWorkflowID(config)
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                scope.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.KubernetesClusterKey.ValueSet(string(scope.Cluster)), searchattr.SandboxConfigKey.ValueSet(config)),
		Memo:          map[string]any{"summary": fmt.Sprintf("rolls SandboxConfig %s out to its class's unpinned pools, step by step", config)},
		StaticSummary: fmt.Sprintf("[%s] staged rollout of SandboxConfig %s", scope.Cluster, config),
	}, RolloutWorkflow, RolloutInput{Config: config})
	if err != nil {
		return fmt.Errorf("starting rollout workflow %s: %w", id, err)
	}
	return nil
}

// SignalRollout sends a rollout workflow a signal (SignalPause,
// SignalResume or SignalRecheck). A rollout that is not running is no
// error: there is nothing to hold, resume or wake.
func SignalRollout(ctx context.Context, c client.Client, cluster Cluster, config, signal string, payload RolloutSignal) error {
	id := cluster.RolloutWorkflowID(config)
	err := c.SignalWorkflow(ctx, id, "", signal, payload)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("signalling %s to rollout workflow %s: %w", signal, id, err)
	}
	return nil
}
