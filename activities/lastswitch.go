package activities

import (
	"context"

	"ate.dev/orchestrator/api/v1alpha1"
)

// A switch runs all its steps in one workflow task, and a crash runs that
// task again from its start: the steps cannot learn from the history what
// an earlier run of the task wrote. The class's status tells them instead.
// Every status write of a switch that changes a class's configRef or
// pendingConfigRef (the claim, the confirm, the roll back, the clearing of
// a stale claim) stamps the class with the run that made it
// (status.sandboxClasses[].lastSwitch), in the same write. A step that
// finds the class stamped by its own run knows which of its writes landed:
//
//   - the claim standing (pendingConfigRef = To): the claim landed, go on;
//   - the class on To with no claim: the confirm landed, its event is due;
//   - the class on From with no claim: the roll back landed.
//
// A stamp of another run means another switch wrote the class since the
// move was planned: nothing of it is this run's to write.

// switchRun is the switch run a status write is made for: the workflow
// execution of the activity, local or regular, as the SDK reports it (its
// Caller: not an input anyone could forge). Outside an activity (unit tests
// call the activities directly), the run given to withSwitchRun, or nil:
// writes then carry no stamp and the checks compare a missing stamp with
// none.
func switchRun(ctx context.Context) *v1alpha1.SwitchRunReference {
	if c, ok := callerOf(ctx); ok && c.RunID != "" {
		return &v1alpha1.SwitchRunReference{WorkflowID: c.ID, RunID: c.RunID}
	}
	if run, ok := ctx.Value(switchRunKey{}).(*v1alpha1.SwitchRunReference); ok {
		return run
	}
	return nil
}

type switchRunKey struct{}

// withSwitchRun makes the activities called with ctx outside a worker act
// for run, as a switch's run.
func withSwitchRun(ctx context.Context, run *v1alpha1.SwitchRunReference) context.Context {
	return context.WithValue(ctx, switchRunKey{}, run)
}

// stampedBy reports whether the class was last written by run (both nil
// counts: writes made outside a switch run carry no stamp).
func stampedBy(st *v1alpha1.WorkerPoolSandboxClassStatus, run *v1alpha1.SwitchRunReference) bool {
	var stamp *v1alpha1.SwitchRunReference
	if st != nil {
		stamp = st.LastSwitch
	}
	if stamp == nil || run == nil {
		return stamp == nil && run == nil
	}
	return *stamp == *run
}

// stamp records run as the class's last switch.
func stamp(entry *v1alpha1.WorkerPoolSandboxClassStatus, run *v1alpha1.SwitchRunReference) {
	if run == nil {
		return
	}
	entry.LastSwitch = run.DeepCopy()
}

// ownWrite is what a switch's earlier write left on the class, as its
// own stamp shows it.
type ownWrite int

const (
	ownNone     ownWrite = iota // nothing this run wrote is recognisable on the class
	ownClaim                    // the claim on config stands
	ownConfirm                  // the class is on config, no claim: the confirm landed
	ownRollBack                 // the class is on from, no claim: the roll back landed
)

// ownWriteOn classifies the class's state for the run moving it from
// from to config. A status written outside a switch run (run nil) is
// nobody's own; one stamped by the run in another state (a claim on
// another config, the pool keeper's clearing since) is none of the three.
func ownWriteOn(st *v1alpha1.WorkerPoolSandboxClassStatus, run *v1alpha1.SwitchRunReference, from, config string) ownWrite {
	if run == nil || st == nil || !stampedBy(st, run) {
		return ownNone
	}
	switch pending := st.PendingConfigRef.NameOf(); {
	case pending == config:
		return ownClaim
	case pending != "":
		return ownNone
	case st.ConfigRef.NameOf() == config:
		return ownConfirm
	case st.ConfigRef.NameOf() == from:
		return ownRollBack
	}
	return ownNone
}
