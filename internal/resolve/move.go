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
}

// NextMove returns the first class, in spec order, that needs config work,
// and false when every class is where resolution puts it. Classes that do
// not resolve but keep their config need no move: their condition is plain
// status, written without a switch.
func NextMove(spec []v1alpha1.WorkerPoolSandboxClass, status *v1alpha1.WorkerPoolStatus, configs []Config) (Move, bool) {
	for _, entry := range spec {
		current, pending := "", ""
		if st := status.ClassStatus(entry.Name); st != nil {
			current, pending = refName(st.ConfigRef), refName(st.PendingConfigRef)
		}
		res := Class(entry, current, configs)
		switch {
		case res.Target != "" && res.Target != current:
			return Move{Class: entry.Name, From: current, To: res.Target, FromDeleting: deleting(configs, current), Pending: pending}, true
		case pending != "":
			return Move{Class: entry.Name, From: current, Abandon: pending, Pending: pending}, true
		}
	}
	return Move{}, false
}

func deleting(configs []Config, name string) bool {
	for _, c := range configs {
		if c.Name == name {
			return c.Deleting
		}
	}
	return false
}

func refName(r *v1alpha1.SandboxConfigReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}
