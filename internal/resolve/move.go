package resolve

import "ate.dev/orchestrator/api/v1alpha1"

// Move is the config work one sandbox class of a pool needs: a switch from
// the config its status names to the one it resolves to, or the clearing of
// a claim no switch works on.
type Move struct {
	Class v1alpha1.SandboxClass
	// From is the config the class's status names ("" if none), To the one
	// it resolves to.
	From, To string
	// FromDeleting says From is in deletion: moving off it may free it.
	FromDeleting bool
	// Abandon is a pending claim to clear when the class needs no switch:
	// switches run one at a time per pool, so a claim found with no move to
	// make was left by a switch stopped by hand.
	Abandon string
	// Pending is the claim the class holds now, if any: with To equal to it,
	// a switch is (or was) under way.
	Pending string
	// SpecConfigRef is the config the class's spec entry pins, "" when it
	// follows the class default: what the move was planned from. The
	// claim is written only while the spec still says the same (a re-pin
	// since asks for another move; a scale does not).
	SpecConfigRef string
	// FromRun is the run ID of the switch that last wrote the class
	// (status lastSwitch), "" for none: the claim is written only while
	// the class still shows that run's write, so a switch whose plan
	// another switch has since acted on (even one that moved the class
	// away and back) writes nothing.
	FromRun string
}

// ClassPlan is one class of a pool as resolution sees it: the config its
// status names, its pending claim, and what it resolves to.
type ClassPlan struct {
	Class            v1alpha1.SandboxClass
	Current, Pending string
	// LastRun is the run ID of the switch that last wrote the class.
	LastRun string
	Result  Result
}

// PlanClass resolves one entry of a pool's spec against its status.
func PlanClass(pool Pool, entry v1alpha1.WorkerPoolSandboxClass, status *v1alpha1.WorkerPoolStatus, configs []Config) ClassPlan {
	p := ClassPlan{Class: entry.Name}
	if st := status.ClassStatus(entry.Name); st != nil {
		p.Current, p.Pending, p.LastRun = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), st.LastSwitch.RunIDOf()
	}
	p.Result = Class(pool, entry, p.Current, configs)
	return p
}

// Moves reports whether the class resolves to another config than its
// status names.
func (p ClassPlan) Moves() bool { return p.Result.Target != "" && p.Result.Target != p.Current }

// NeedsSwitch reports whether the class is a switch's to write: it must
// move, or it holds a claim.
func (p ClassPlan) NeedsSwitch() bool { return p.Moves() || p.Pending != "" }

// NextMove returns the first class, in spec order, that needs config work,
// and false when every class is where resolution puts it. Classes that do
// not resolve but keep their config need no move: their condition is plain
// status, written without a switch.
func NextMove(pool Pool, spec []v1alpha1.WorkerPoolSandboxClass, status *v1alpha1.WorkerPoolStatus, configs []Config) (Move, bool) {
	for _, entry := range spec {
		p := PlanClass(pool, entry, status, configs)
		switch {
		case p.Moves():
			return Move{Class: p.Class, From: p.Current, To: p.Result.Target, FromDeleting: Deleting(configs, p.Current), Pending: p.Pending,
				SpecConfigRef: entry.ConfigRef.NameOf(), FromRun: p.LastRun}, true
		case p.Pending != "":
			return Move{Class: p.Class, From: p.Current, Abandon: p.Pending, Pending: p.Pending, SpecConfigRef: entry.ConfigRef.NameOf()}, true
		}
	}
	return Move{}, false
}

// Deleting reports whether the named config is in deletion.
func Deleting(configs []Config, name string) bool {
	for _, c := range configs {
		if c.Name == name {
			return c.Deleting
		}
	}
	return false
}
