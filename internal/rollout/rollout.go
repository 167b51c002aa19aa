// Package rollout is the pure planner of staged rollouts: the order in
// which a class's unpinned pools move to a rolling-out class default, how
// many each step admits, and whether a pool is admitted. Resolution, the
// rollout workflow's activities and the preview all ask it, so they agree.
package rollout

import (
	"math"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// PoolKey is a pool's place in rollout order: canary-labelled pools first,
// then by namespace, then by name. The order is total and stable, so a
// paused and resumed rollout goes on with the same pools, and every process
// computes the same one.
type PoolKey struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Canary    bool   `json:"canary,omitempty"`
}

// KeyOf is the rollout key of a pool.
func KeyOf(pool metav1.Object) PoolKey {
	return PoolKey{Namespace: pool.GetNamespace(), Name: pool.GetName(), Canary: pool.GetLabels()[v1alpha1.CanaryLabel] == "true"}
}

// String is "namespace/name".
func (k PoolKey) String() string { return k.Namespace + "/" + k.Name }

// Less orders keys: canary first, then namespace, then name. Comparing the
// parts, not a joined string, keeps "a/x" after "a-b/y" as namespaces sort.
func (k PoolKey) Less(o PoolKey) bool {
	if k.Canary != o.Canary {
		return k.Canary
	}
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	return k.Name < o.Name
}

// NotAfter reports whether k comes at or before o in rollout order.
func (k PoolKey) NotAfter(o PoolKey) bool { return !o.Less(k) }

// RefOf and KeyOfRef convert between a key and its status form.
func RefOf(k *PoolKey) *v1alpha1.RolloutPoolRef {
	if k == nil {
		return nil
	}
	return &v1alpha1.RolloutPoolRef{Namespace: k.Namespace, Name: k.Name, Canary: k.Canary}
}

// KeyOfRef is the key a status's admittedThrough names; nil for none.
func KeyOfRef(r *v1alpha1.RolloutPoolRef) *PoolKey {
	if r == nil {
		return nil
	}
	return &PoolKey{Namespace: r.Namespace, Name: r.Name, Canary: r.Canary}
}

// Admission is what resolution needs of a rolling-out config: nil for a
// config without spec.rollout, or whose rollout completed (every pool
// follows it at once, as without a rollout).
//
// A pool is admitted when it is on the config already, is one of Canaries
// (canary pools admitted by name: they stay admitted whatever their labels
// do), or its namespace and name sort at or before Through, whatever its
// labels. A label added mid-rollout therefore changes nothing until the
// next step, which takes the canary-labelled pools not admitted yet first.
type Admission struct {
	// Step is status.rollout.step: the step being worked on, from 1.
	Step int32 `json:"step,omitempty"`
	// Canaries are the canary pools admitted, "namespace/name".
	Canaries []string `json:"canaries,omitempty"`
	// Through is the last admitted pool in name order; nil: none but the
	// pools already on the config and Canaries. A Through with Canary set
	// was written before admittedCanaries existed (v0.1.0): it admits the
	// canary-labelled pools at or before it, as it did then.
	Through *PoolKey `json:"through,omitempty"`
	// Aborted is true while the rollout is aborted: it admits no pool, not
	// even one on the config, which goes back to the config it came from.
	Aborted bool `json:"aborted,omitempty"`
	// RolledBack is true when the abort is the rollout's own, a failed
	// step's rollback (spec.rollout.onFailure RollBack).
	RolledBack bool `json:"rolledBack,omitempty"`
}

// AdmissionOf is the admission of a config as its spec and status say.
func AdmissionOf(c *v1alpha1.SandboxConfig) *Admission {
	if c.Spec.Rollout == nil {
		return nil
	}
	st := c.Status.Rollout
	if st == nil {
		return &Admission{}
	}
	if st.Phase == v1alpha1.RolloutCompleted {
		return nil
	}
	if st.Abort != nil {
		return &Admission{Step: st.Step, Aborted: true, RolledBack: st.Abort.RolledBack}
	}
	return StatusAdmission(st)
}

// StatusAdmission is the admission a status records, whatever its phase:
// nothing admitted for no status.
func StatusAdmission(st *v1alpha1.RolloutStatus) *Admission {
	if st == nil {
		return &Admission{}
	}
	return &Admission{Step: st.Step, Canaries: st.AdmittedCanaries, Through: KeyOfRef(st.AdmittedThrough)}
}

// Admits reports whether a pool may move to the config: always without a
// staged rollout; with one, when it is on the config already or admitted.
func (a *Admission) Admits(pool PoolKey, current, config string) bool {
	if a != nil && a.Aborted {
		return false
	}
	if a == nil || current == config {
		return true
	}
	return a.admitted(pool)
}

func (a *Admission) admitted(pool PoolKey) bool {
	if slices.Contains(a.Canaries, pool.String()) {
		return true
	}
	switch t := a.Through; {
	case t == nil:
		return false
	case t.Canary:
		return pool.Canary && pool.NotAfter(*t)
	}
	return !byName(*a.Through, pool)
}

// byName reports whether a sorts before b by namespace, then name.
func byName(a, b PoolKey) bool {
	a.Canary, b.Canary = false, false
	return a.Less(b)
}

// Mark is the admission as status records it before a step (stepStart).
func (a *Admission) Mark() *v1alpha1.RolloutAdmissionMark {
	if a == nil {
		return nil
	}
	return &v1alpha1.RolloutAdmissionMark{Canaries: int32(len(a.Canaries)), Through: RefOf(a.Through)}
}

// AtMark is the admission a mark recorded, given the current canaries
// (which only grow: the mark keeps the first Canaries of them).
func (a *Admission) AtMark(m *v1alpha1.RolloutAdmissionMark) *Admission {
	out := &Admission{}
	if a != nil {
		out.Step = a.Step
	}
	if m == nil || a == nil {
		return out
	}
	out.Canaries = a.Canaries[:min(int(m.Canaries), len(a.Canaries))]
	out.Through = KeyOfRef(m.Through)
	return out
}

// Pool is one unpinned pool of the class as the planner sees it.
type Pool struct {
	Key PoolKey `json:"key"`
	// Current is the config its class's status names ("" for none).
	Current string `json:"current,omitempty"`
}

// Sort puts pools in rollout order.
func Sort(pools []Pool) {
	sort.Slice(pools, func(i, j int) bool { return pools[i].Key.Less(pools[j].Key) })
}

// Want is how many of total pools must be on the config once step is done:
// an absolute number (at most total), or a share rounded up, so that a
// percent step over a small class still moves a pool.
func Want(step v1alpha1.RolloutStep, total int) int {
	switch {
	case step.Pools != nil:
		return min(int(*step.Pools), total)
	case step.Percent != nil:
		return min(int(math.Ceil(float64(*step.Percent)*float64(total)/100)), total)
	}
	return total
}

// Advance admits pools until want of them are admitted: the ones admitted
// already count; then the canary-labelled pools not admitted, in order,
// join Canaries; then Through moves on by name. It returns the new
// admission, which never admits less than prev (a step run again after a
// crash, once its pools moved, admits nothing back), and how many pools it
// admits. pools must be sorted.
func Advance(pools []Pool, config string, want int, prev *Admission) (next *Admission, admitted int) {
	next = &Admission{}
	if prev != nil {
		next.Step, next.Through = prev.Step, prev.Through
		next.Canaries = slices.Clone(prev.Canaries)
		if next.Through != nil && next.Through.Canary {
			// A v0.1.0 boundary among the canaries: those it admits
			// are named, and the name boundary starts afresh.
			for _, p := range pools {
				if p.Key.Canary && p.Key.NotAfter(*next.Through) && !slices.Contains(next.Canaries, p.Key.String()) {
					next.Canaries = append(next.Canaries, p.Key.String())
				}
			}
			next.Through = nil
		}
	}
	for _, p := range pools {
		if next.Admits(p.Key, p.Current, config) {
			admitted++
		}
	}
	for _, p := range pools {
		if admitted >= want {
			return next, admitted
		}
		if p.Key.Canary && !next.Admits(p.Key, p.Current, config) {
			next.Canaries = append(next.Canaries, p.Key.String())
			admitted++
		}
	}
	byNameOrder := slices.Clone(pools)
	slices.SortFunc(byNameOrder, func(a, b Pool) int {
		switch {
		case byName(a.Key, b.Key):
			return -1
		case byName(b.Key, a.Key):
			return 1
		}
		return 0
	})
	for _, p := range byNameOrder {
		if admitted >= want {
			break
		}
		if next.Admits(p.Key, p.Current, config) {
			continue
		}
		k := p.Key
		k.Canary = false
		next.Through = &k
		admitted++
	}
	return next, admitted
}

// Count is how many pools the admission admits, and how many are on config.
func Count(pools []Pool, config string, a *Admission) (admitted, moved int) {
	for _, p := range pools {
		if a.Admits(p.Key, p.Current, config) {
			admitted++
		}
		if p.Current == config {
			moved++
		}
	}
	return admitted, moved
}

// Between lists, in order, the pools next admits and from did not: a
// step's pools.
func Between(pools []Pool, config string, from, next *Admission) []string {
	out := []string{}
	for _, p := range pools {
		if next.Admits(p.Key, "", config) && (from == nil || !from.Admits(p.Key, "", config)) {
			out = append(out, p.Key.String())
		}
	}
	return out
}

// PlannedStep is one step of a plan: the pools it admits (Pools, in order)
// and how many pools are admitted once it is done.
type PlannedStep struct {
	Step     int32    `json:"step"`
	Want     int      `json:"want"`
	Pools    []string `json:"pools"`
	Admitted int      `json:"admitted"`
}

// Plan lays the steps out from where the rollout stands (adm; nil for
// nothing admitted): the pools each step from `from` (1 for all) would
// admit. Already lists the pools admitted before it (on the config, or
// admitted), which move without waiting for a step.
func Plan(pools []Pool, config string, steps []v1alpha1.RolloutStep, from int32, adm *Admission) (already []string, planned []PlannedStep) {
	sorted := append([]Pool(nil), pools...)
	Sort(sorted)
	a := adm
	if a == nil {
		a = &Admission{}
	}
	for _, p := range sorted {
		if a.Admits(p.Key, p.Current, config) {
			already = append(already, p.Key.String())
		}
	}
	if from < 1 {
		from = 1
	}
	for i := from; int(i) <= len(steps); i++ {
		want := Want(steps[i-1], len(sorted))
		next, admitted := Advance(sorted, config, want, a)
		ps := PlannedStep{Step: i, Want: want, Admitted: admitted, Pools: []string{}}
		for _, p := range sorted {
			if !a.Admits(p.Key, p.Current, config) && next.Admits(p.Key, p.Current, config) {
				ps.Pools = append(ps.Pools, p.Key.String())
			}
		}
		planned = append(planned, ps)
		a = next
	}
	return already, planned
}

// NotAfterOrNil reports whether k comes at or before o; false for no o.
func (k PoolKey) NotAfterOrNil(o *PoolKey) bool { return o != nil && k.NotAfter(*o) }
