package wfapi

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
)

// PoolRef names a WorkerPool, and the incarnation of it a workflow acts for:
// a pool deleted and created again under the same name has a new UID, and
// writes meant for the old one must not land on the new one.
type PoolRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (p PoolRef) String() string { return PoolKey(p.Namespace, p.Name) }

// Key is the pool's object key.
func (p PoolRef) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// SwitchInput moves one sandbox class of one pool to another config.
//
// A switch (ID SwitchWorkflowID) started by the starter carries the move
// the starter's cache asked for; one started by an operator with no input
// decides its move itself, from a live read.
type SwitchInput struct {
	Pool  PoolRef               `json:"pool"`
	Class v1alpha1.SandboxClass `json:"class"`
	// From is the config the class's status names now ("" on the first
	// resolution); To is the one it moves to.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// FromDeleting says the pool saw From in deletion: moving off it may
	// free it, so its release workflow is woken.
	FromDeleting bool `json:"fromDeleting,omitempty"`
	// Abandon names a claim no switch works on (left by a switch stopped by
	// hand) that a switch with no To clears.
	Abandon string `json:"abandon,omitempty"`
	// Generation is the pool generation the switch acts on.
	Generation int64 `json:"generation"`
	// PoolResourceVersion is the pool's resourceVersion the move was decided
	// on: the claim writes on it when the pool is still at it. "" reads
	// first.
	PoolResourceVersion string `json:"poolResourceVersion,omitempty"`
	// SpecConfigRef is the config the class's spec entry pinned when the
	// move was planned, "" when it followed the class default
	// (resolve.Move's): the claim is written only while the spec still
	// says the same. nil in inputs that expect nothing of the spec (a switch
	// started by hand).
	SpecConfigRef *string `json:"specConfigRef,omitempty"`
	// FromRun is the run ID of the switch that last wrote the class when the
	// move was planned (its status lastSwitch; "" for none): the claim is
	// written only while the class still shows that run's write. nil in
	// inputs that expect nothing of it (a switch started by hand).
	FromRun *string `json:"fromRun,omitempty"`
}

// IsMove reports whether the input names a move (or a claim to clear), as
// the starter's do; an operator's start carries none.
func (in SwitchInput) IsMove() bool { return in.To != "" || in.Abandon != "" }

// SwitchResult is how a switch ended.
type SwitchResult struct {
	// Outcome is OutcomeConfirmed, OutcomeRolledBack, OutcomePoolGone,
	// OutcomeSuperseded or OutcomeUpToDate.
	Outcome string `json:"outcome"`
	// Reason and Message are those of the Resolved condition the switch wrote.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// SwitchState is what the `state` query of a switch returns: the move,
// the step it is at, and its outcome once it has one.
type SwitchState struct {
	Pool    string `json:"pool"`
	Class   string `json:"class,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Abandon string `json:"abandon,omitempty"`
	Step    string `json:"step"`
	Outcome string `json:"outcome,omitempty"`
}

// MoveInput is the input of the switch that makes move m, decided on
// the pool at generation and resourceVersion.
func MoveInput(pool PoolRef, m resolve.Move, generation int64, resourceVersion string) SwitchInput {
	in := SwitchInput{
		Pool: pool, Class: m.Class, From: m.From, To: m.To, FromDeleting: m.FromDeleting,
		Generation: generation, PoolResourceVersion: resourceVersion,
	}
	if m.To == "" {
		in.Abandon = m.Abandon
	} else {
		spec, run := m.SpecConfigRef, m.FromRun
		in.SpecConfigRef, in.FromRun = &spec, &run
	}
	return in
}

// SwitchAttributes are the search attributes an operator finds a switch by:
// set at its start, or upserted by one that decides its move itself.
func SwitchAttributes(cluster Cluster, in SwitchInput) []temporal.SearchAttributeUpdate {
	to := in.To
	if to == "" {
		to = in.Abandon
	}
	attrs := []temporal.SearchAttributeUpdate{
		searchattr.KubernetesClusterKey.ValueSet(string(cluster)),
		searchattr.WorkerPoolKey.ValueSet(in.Pool.String()),
		searchattr.SandboxClassKey.ValueSet(string(in.Class)),
		searchattr.ToConfigKey.ValueSet(to),
	}
	if in.From != "" {
		attrs = append(attrs, searchattr.FromConfigKey.ValueSet(in.From))
	}
	return attrs
}

// SwitchSummary is the one line the Web UI shows for a switch (its memo).
func SwitchSummary(in SwitchInput) string {
	if !in.IsMove() {
		return fmt.Sprintf("%s: re-resolve on request", in.Pool)
	}
	if in.To == "" {
		return fmt.Sprintf("%s: sandbox class %q: clearing the stale claim on %q", in.Pool, in.Class, in.Abandon)
	}
	return fmt.Sprintf("%s: sandbox class %q from %q to %q", in.Pool, in.Class, in.From, in.To)
}
