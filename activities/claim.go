package activities

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/wfapi"
)

// ClaimInput claims a config for a class of a pool.
type ClaimInput struct {
	Pool   wfapi.PoolRef         `json:"pool"`
	Class  v1alpha1.SandboxClass `json:"class"`
	Config string                `json:"config"`
	// ResourceVersion is the pool's as the move's plan observed it, or ""
	// (none known: the claim reads the pool): see updateStatus.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// ExpectFrom makes the claim conditional: it is written only while the
	// class's status still names From (none when From is ""), the config
	// the move was decided from. A switch decides on the starter's
	// cache, which may be behind another switch of the pool.
	ExpectFrom bool   `json:"expectFrom,omitempty"`
	From       string `json:"from,omitempty"`
	// ExpectSpec makes the claim conditional on the pool's spec too: it is
	// written only while the class's spec.configRef names SpecConfigRef
	// ("" for none: the class follows its default), as it did when the
	// move was planned. A re-pin since then asks for another move; a
	// scale (another generation, the same class entry) does not.
	ExpectSpec    bool   `json:"expectSpec,omitempty"`
	SpecConfigRef string `json:"specConfigRef,omitempty"`
	// ExpectRun makes the claim conditional on the class's lastSwitch: it
	// is written only while the run that last wrote the class is FromRun
	// ("" for none), as when the move was planned. A run that moved the
	// class since, even away and back to From, makes the plan stale.
	ExpectRun bool   `json:"expectRun,omitempty"`
	FromRun   string `json:"fromRun,omitempty"`
	// OnlyOwn makes the claim only look: it reports what this switch run
	// already wrote on the class, as any claim does first, and otherwise
	// writes nothing and reports Unclaimed. A switch interrupted before its
	// claim asks it to learn whether it may give way.
	OnlyOwn bool `json:"onlyOwn,omitempty"`
}

// Claim records the config a class is moving to in pendingConfigRef, with
// configRef unchanged, and stamps the class with the switch's run. From this
// write on, the release workflow sees the pool as a user of the config, so
// Confirm's live read of the target can trust what it sees
// (docs/switch-protocol.md, "Why the live read follows the claim"). It
// writes only while the class is as the move was planned (on From, and on
// the spec's config and the last switch run when asked: else Superseded)
// and the config is protected (P1: else Refused, read live when the
// worker's cache does not say so); with OnlyOwn it only looks (Unclaimed).
//
// The claim runs in the same workflow task as the confirm, so a crash can
// run it again after any of the switch's writes: it first looks for its
// own run's stamp (lastswitch.go). Its claim standing: nothing to write, go
// on. The class on the target: the confirm landed (Landed). The class on
// From with no claim: the roll back landed (RolledBack).
func (a *Activities) Claim(ctx context.Context, in ClaimInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepClaim, in.Pool, in.Class, &err)
	c := claim{a: a, in: in, run: switchRun(ctx)}
	// Its own run's write is looked for before any other guard: an
	// earlier run's confirm stands even if the spec or the target changed
	// since.
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("claiming SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		c.write, specHas(in.Class), pure(c.ours), pure(c.onlyLooks), pure(c.planned), c.protected)
	if err != nil {
		return nil, err
	}
	if res.Outcome == PoolGone && c.landedBeforeGone(ctx) {
		res.Outcome = LandedThenGone
	}
	return res, nil
}

// claim is one Claim: its input and the switch run it writes for. Each of
// its guards, and its write, judges the pool as one attempt of
// updateStatus read it and returns its verdict; it keeps nothing between
// attempts.
type claim struct {
	a   *Activities
	in  ClaimInput
	run *v1alpha1.SwitchRunReference
}

// ours looks for what this run already wrote on the class (lastswitch.go):
// its claim standing (Written: nothing more to write, the switch goes on),
// its confirm (Landed) or its roll back (RolledBack, with the Warning
// still due). nil when the class shows nothing of this run's.
func (c claim) ours(pool *v1alpha1.WorkerPool) *verdict {
	st := pool.Status.ClassStatus(c.in.Class)
	switch ownWriteOn(st, c.run, c.in.From, c.in.Config) {
	case ownClaim:
		return &verdict{Outcome: Written}
	case ownConfirm:
		return &verdict{Outcome: Landed}
	case ownRollBack:
		earlier := &EarlierRollBack{}
		if cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved); cond != nil && cond.Status == metav1.ConditionFalse {
			earlier.Reason, earlier.Message, earlier.FailingSince = cond.Reason, cond.Message, cond.LastTransitionTime.DeepCopy()
		}
		return &verdict{Outcome: RolledBack, Earlier: earlier}
	}
	return nil
}

// onlyLooks stops a claim asked only to look (OnlyOwn) that found nothing
// of its run's: Unclaimed.
func (c claim) onlyLooks(*v1alpha1.WorkerPool) *verdict {
	if c.in.OnlyOwn {
		return &verdict{Outcome: Unclaimed}
	}
	return nil
}

// planned supersedes a claim whose spec asks for another move since the
// plan (ExpectSpec).
func (c claim) planned(pool *v1alpha1.WorkerPool) *verdict {
	if c.in.ExpectSpec && specConfigRef(pool, c.in.Class) != c.in.SpecConfigRef {
		return &verdict{Outcome: Superseded}
	}
	return nil
}

// protected refuses a config that is not protected (P1): the switch's
// Protect saw to it, so the worker's cache normally says so; a cache that
// does not reads live. A claim already on the config (a retry) was checked
// when it was written.
func (c claim) protected(ctx context.Context, pool *v1alpha1.WorkerPool) (*verdict, error) {
	if st := pool.Status.ClassStatus(c.in.Class); st != nil && st.PendingConfigRef.NameOf() == c.in.Config {
		return nil, nil
	}
	if c.a.protectedInCache(ctx, ProtectInput{Config: c.in.Config, Class: c.in.Class}) {
		return nil, nil
	}
	check, err := c.a.liveTarget(ctx, c.in.Config, c.in.Class)
	if err != nil {
		return nil, err
	}
	if !check.OK {
		return &verdict{Outcome: Refused, Refusal: check}, nil
	}
	return nil, nil
}

// write claims the config for the class, stamped with the run, unless the
// class is no longer as the move was planned: on From (ExpectFrom) and
// last written by FromRun (ExpectRun); then it changes nothing and the
// claim is Superseded. A claim it replaces is Displaced.
func (c claim) write(pool *v1alpha1.WorkerPool) verdict {
	st := pool.Status.ClassStatus(c.in.Class)
	if c.in.ExpectFrom {
		current := ""
		if st != nil && st.ConfigRef != nil {
			current = st.ConfigRef.Name
		}
		if current != c.in.From {
			return verdict{Outcome: Superseded}
		}
	}
	var last *v1alpha1.SwitchRunReference
	if st != nil {
		last = st.LastSwitch
	}
	if c.in.ExpectRun && last.RunIDOf() != c.in.FromRun {
		return verdict{Outcome: Superseded} // another run wrote the class since the plan
	}
	var displaced string
	entry := poolstatus.EnsureClass(&pool.Status, c.in.Class)
	if p := entry.PendingConfigRef; p != nil && p.Name != c.in.Config && (entry.ConfigRef == nil || p.Name != entry.ConfigRef.Name) {
		displaced = p.Name
	}
	entry.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: c.in.Config}
	stamp(entry, c.run)
	return verdict{Displaced: displaced}
}

// landedBeforeGone tells a claim that found the pool gone whether an
// earlier run of the switch's task had confirmed before the pool went: the
// pool's states since the plan show the class on the target with this
// run's stamp (landed.go). A first run finds no such state, and a claim
// made outside a switch run (no run) has none to look for.
func (c claim) landedBeforeGone(ctx context.Context) bool {
	return c.run != nil && c.a.landedBeforeGone(ctx, SettleInput{Pool: c.in.Pool, Class: c.in.Class, Config: c.in.Config,
		ResourceVersion: c.in.ResourceVersion})
}
