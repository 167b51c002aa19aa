package main

import (
	"context"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/resolve"
)

// noopActivities stand in for *activities.Activities on the Temporal
// floor's worker: the same method names and signatures (the workflows call
// their activities, local ones included, by those names, and a local
// activity's arguments reach it as Go values), each returning what the
// real one returns when a switch goes its happy path, without touching the
// API server. Only the steps a switch from one class default to the next
// runs are here; TestNoopActivitiesMatchTheProducts checks their
// signatures and that the real Switch workflow confirms on them.
type noopActivities struct {
	// events marks each pool whose RecordEvent ran: the point the product
	// is timed to.
	events atomic.Pointer[tracker]
	writes atomic.Int64 // the pools' resourceVersions
}

func (a *noopActivities) Protect(context.Context, activities.ProtectInput) (*activities.TargetCheck, error) {
	return &activities.TargetCheck{OK: true}, nil
}

func (a *noopActivities) Claim(context.Context, activities.ClaimInput) (*activities.PoolWrite, error) {
	return &activities.PoolWrite{Outcome: activities.Written, ResourceVersion: a.resourceVersion()}, nil
}

// ReadConfig finds the target a protected class default of the class the
// floor switches.
func (a *noopActivities) ReadConfig(_ context.Context, name string) (*resolve.Config, error) {
	return &resolve.Config{Name: name, Class: v1alpha1.SandboxClassGVisor, ClassDefault: true, Protected: true,
		UID: types.UID("uid-" + name), ResourceVersion: "1"}, nil
}

func (a *noopActivities) Confirm(context.Context, activities.SettleInput) (*activities.PoolWrite, error) {
	return &activities.PoolWrite{Outcome: activities.Written, ResourceVersion: a.resourceVersion()}, nil
}

func (a *noopActivities) RecordEvent(_ context.Context, in events.PoolEvent) error {
	if t := a.events.Load(); t != nil {
		t.mark(in.Pool.Namespace + "/" + in.Pool.Name)
	}
	return nil
}

// WakeReleases runs when the class left a config in deletion, or a claim
// displaced another; the floor's switches do neither, as the product's
// switches in the bench do not.
func (a *noopActivities) WakeReleases(context.Context, activities.WakeInput) error { return nil }

func (a *noopActivities) resourceVersion() string {
	return strconv.FormatInt(a.writes.Add(1), 10)
}
