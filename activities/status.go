package activities

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// WriteOutcome is what a switch's status step (Claim, Confirm, RollBack,
// AbandonClaim) found and did: one value, with the data that goes with it
// in PoolWrite.
type WriteOutcome string

const (
	// Written: the step's write is in place, made by this call or found
	// made (a retry, or a re-run of the switch's task: Claim finding this
	// run's claim standing, Confirm its confirm, RollBack its roll back).
	Written WriteOutcome = "written"
	// PoolGone: the pool no longer exists, or is a new pool under the same
	// name: nothing was written and the switch stops acting for it.
	PoolGone WriteOutcome = "pool gone"
	// Landed: an earlier run of the switch's workflow task confirmed (the
	// class on the target with this run's stamp), found by a re-run's Claim
	// or RollBack: nothing was written, the move happened and its event is
	// due.
	Landed WriteOutcome = "landed"
	// LandedThenGone: the pool is gone, and its last states show that this
	// run had confirmed before it went (landed.go): nothing was written,
	// the move's event is still due, and the switch ends pool gone.
	LandedThenGone WriteOutcome = "landed, then pool gone"
	// Superseded: another writer took the class since the move was planned
	// (a Claim that found the class, its lastSwitch or its spec no longer
	// as planned) or since the claim (a Confirm or RollBack whose claim
	// the class no longer holds). Nothing was written.
	Superseded WriteOutcome = "superseded"
	// Refused: a Claim or a Confirm found the target not fit to be named
	// (PoolWrite.Refusal says why): missing, of another class, in deletion,
	// or without the protection finalizer (a Confirm reads it live; a Claim
	// trusts a cache that shows it protected, and reads live otherwise).
	// Nothing was written.
	Refused WriteOutcome = "refused"
	// RolledBack: a re-run's Claim found the class as this run's own roll
	// back left it (PoolWrite.Earlier): nothing was written; the switch
	// ends rolled back.
	RolledBack WriteOutcome = "rolled back"
	// Unclaimed: a Claim that only looked (OnlyOwn) found nothing of this
	// run on the class. Nothing was written.
	Unclaimed WriteOutcome = "unclaimed"
)

// PoolWrite is the result of a switch's status step.
type PoolWrite struct {
	Outcome WriteOutcome `json:"outcome"`
	// Wrote is true when this call changed the status. A retried call whose
	// first attempt landed reports false.
	Wrote bool `json:"wrote,omitempty"`
	// ResourceVersion is the pool's resourceVersion after this call: the
	// write's, or the one read when there was nothing to write. The next
	// status write of the switch passes it on (see updateStatus).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Displaced is a claim a Written Claim replaced.
	Displaced string `json:"displaced,omitempty"`
	// FailingSince comes with a Written RollBack: the lastTransitionTime of
	// the class's Resolved condition, False, the appearance of the failure
	// its Warning reports (events.FailureWarning).
	FailingSince *metav1.Time `json:"failingSince,omitempty"`
	// Refusal comes with Refused: why the target was refused, the reason
	// and message the switch rolls back with.
	Refusal *TargetCheck `json:"refusal,omitempty"`
	// Earlier comes with RolledBack: the roll back the earlier run left.
	Earlier *EarlierRollBack `json:"earlier,omitempty"`
}

// EarlierRollBack is the class's Resolved condition as an earlier run of
// the switch's task left it: the Warning of its failure is still due, keyed
// by the same appearance (FailingSince), so it is recorded once. Reason is
// empty when the condition is no longer False (the pool keeper has since
// found the class resolved): then no Warning is due.
type EarlierRollBack struct {
	Reason       string       `json:"reason,omitempty"`
	Message      string       `json:"message,omitempty"`
	FailingSince *metav1.Time `json:"failingSince,omitempty"`
}

// updateStatus reads the pool, lets mutate change its status, and writes the
// status back if anything changed. The write carries the resourceVersion the
// pool was read at, so it cannot overwrite a status someone else wrote in the
// meantime; a conflict reads again and mutates the fresh copy.
//
// known is a resourceVersion of the pool the workflow already knows (the one
// its pass observed, or the one the switch's previous write returned), or
// "". When the worker's cache holds the pool at exactly that version, the
// first attempt starts from the cached copy instead of a read from the API
// server: the same object, as a resourceVersion names one state of it, and
// the write is guarded by that version like any other, so a pool changed
// since only costs the conflict and the re-read. A cache at another version
// (behind, or ahead because someone else wrote) is not used: the live read
// costs less than a write bound to conflict.
//
// guards look at the pool as read, before mutate, and may stop the call
// with nothing written (see guard); mutate says what its change is (see
// mutation). The result is the last attempt's verdict.
func (a *Activities) updateStatus(ctx context.Context, ref wfapi.PoolRef, known, what string, mutate mutation, guards ...guard) (*PoolWrite, error) {
	if err := checkCaller(ctx, switchOf(ref)); err != nil {
		return nil, err
	}
	res := &PoolWrite{}
	var stopped error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		*res, stopped = PoolWrite{Outcome: Written}, nil
		var pool v1alpha1.WorkerPool
		if !a.cachedAt(ctx, ref, known, &pool) {
			if err := a.Live.Get(ctx, poolKey(ref), &pool); err != nil {
				if apierrors.IsNotFound(err) {
					res.Outcome = PoolGone
					return nil
				}
				return err
			}
		}
		known = "" // a conflict reads live
		if ref.UID != "" && string(pool.UID) != ref.UID {
			res.Outcome = PoolGone
			return nil
		}
		for _, guard := range guards {
			v, err := guard(ctx, &pool)
			if err != nil || v != nil {
				if v != nil {
					v.into(res)
				}
				stopped, res.ResourceVersion = err, pool.ResourceVersion
				return nil
			}
		}
		before := pool.Status.DeepCopy()
		v := mutate(&pool)
		clearStepFailures(&pool.Status)
		poolstatus.SetSummary(&pool)
		if equality.Semantic.DeepEqual(before, &pool.Status) {
			v.into(res)
			res.ResourceVersion = pool.ResourceVersion
			return nil
		}
		if err := a.Live.Status().Update(ctx, &pool); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted since it was read (or since the cached version).
				res.Outcome = PoolGone
				return nil
			}
			return err
		}
		v.into(res)
		res.Wrote, res.ResourceVersion = true, pool.ResourceVersion
		a.written.put(&pool)
		return nil
	})
	if err == nil && stopped != nil {
		var r refusal
		if errors.As(stopped, &r) {
			return nil, invalidInput("%s on WorkerPool %s: %s", what, ref, r)
		}
		err = stopped
	}
	if apierrors.IsInvalid(err) {
		// The API server refuses the status itself (e.g. a class the CRD
		// does not know, from a switch started by hand): the same write is
		// refused on every retry, so fail now and say why.
		return nil, invalidInput("%s on WorkerPool %s: %v", what, ref, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s on WorkerPool %s: %w", what, ref, err)
	}
	return res, nil
}

// cachedAt reads the pool into pool when this worker knows the
// incarnation ref names at resourceVersion rv without asking the API
// server: as its own last write of the pool left it (writtenPools), or from
// its cache.
func (a *Activities) cachedAt(ctx context.Context, ref wfapi.PoolRef, rv string, pool *v1alpha1.WorkerPool) bool {
	if rv == "" {
		return false
	}
	if written, ok := a.written.take(poolKey(ref), rv); ok && (ref.UID == "" || string(written.UID) == ref.UID) {
		*pool = *written
		return true
	}
	if a.Cache == nil {
		return false
	}
	if err := a.Cache.Get(ctx, poolKey(ref), pool); err != nil {
		return false
	}
	return pool.ResourceVersion == rv && (ref.UID == "" || string(pool.UID) == ref.UID)
}

// SettleInput ends a switch: a confirm moves configRef to the claimed config,
// a roll back keeps configRef; both clear the claim and set the Resolved
// condition.
type SettleInput struct {
	Pool       wfapi.PoolRef         `json:"pool"`
	Class      v1alpha1.SandboxClass `json:"class"`
	Config     string                `json:"config"`
	Generation int64                 `json:"generation"`
	// Reason and Message of the Resolved condition of a roll back.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// ResourceVersion is the pool's as the switch's claim left it, or "":
	// see updateStatus.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Claimed says the switch's claim stands (a roll back after the claim,
	// not after a refused protection). Between its claim and its end only
	// the switch writes the class's configRef, so a roll back that finds
	// the class on the config knows an earlier run confirmed it.
	Claimed bool `json:"claimed,omitempty"`
	// From and FromRun are the move's plan, for a roll back with no claim:
	// it writes only while the class is still on From with no claim and,
	// with ExpectRun, last written by the run FromRun (see Claim). Without
	// a claim, ResourceVersion is the plan's.
	From      string `json:"from,omitempty"`
	ExpectRun bool   `json:"expectRun,omitempty"`
	FromRun   string `json:"fromRun,omitempty"`
}

// asPlanned reports whether a class is as a roll back with no claim
// expects it: on From, holding no claim, and last written by the planned
// run when the plan named one.
func asPlanned(st *v1alpha1.WorkerPoolSandboxClassStatus, in SettleInput) bool {
	if st == nil {
		return in.From == "" && (!in.ExpectRun || in.FromRun == "")
	}
	return st.ConfigRef.NameOf() == in.From && st.PendingConfigRef == nil &&
		(!in.ExpectRun || st.LastSwitch.RunIDOf() == in.FromRun)
}

// Confirm moves the class to the claimed config: configRef = the config,
// pendingConfigRef cleared, Resolved True, in one write, made only while the
// claim stands (else Superseded) and the target, read live, is there,
// protected and usable (else Refused: the switch rolls back).
func (a *Activities) Confirm(ctx context.Context, in SettleInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepConfirm, in.Pool, in.Class, &err)
	if in.Config == "" {
		return nil, invalidInput("confirming a switch needs the config, got %+v", in)
	}
	run := switchRun(ctx)
	// The target is read live once the pool read shows the claim standing:
	// a release that could still take its finalizer off must list the
	// pools after this read, and sees the claim. This read is the switch's
	// one check of its target after the claim (docs/switch-protocol.md,
	// "Why the live read follows the claim"): whoever scheduled this
	// confirm, with whatever claim, the class is never moved to a config
	// that is not there, protected and usable (P1, P3).
	target := func(ctx context.Context, pool *v1alpha1.WorkerPool) (*verdict, error) {
		if landed, superseded := confirmState(pool.Status.ClassStatus(in.Class), in.Config, run); landed || superseded {
			return nil, nil // nothing to write, or not this confirm's to write
		}
		check, err := a.liveTarget(ctx, in.Config, in.Class)
		if err != nil {
			return nil, err
		}
		if !check.OK {
			return &verdict{Outcome: Refused, Refusal: check}, nil
		}
		return nil, nil
	}
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("confirming SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) verdict {
			st := pool.Status.ClassStatus(in.Class)
			// The claim still stands, or an earlier attempt of this confirm
			// landed (the same write again changes nothing). Anything else:
			// another writer took the class since the claim, and this
			// config may have been released meanwhile.
			if _, superseded := confirmState(st, in.Config, run); superseded {
				return verdict{Outcome: Superseded}
			}
			entry := poolstatus.EnsureClass(&pool.Status, in.Class)
			entry.ConfigRef = &v1alpha1.SandboxConfigReference{Name: in.Config}
			entry.PendingConfigRef = nil
			stamp(entry, run)
			poolstatus.SetClassCondition(&pool.Status, in.Class,
				poolstatus.ClassCondition(true, v1alpha1.ReasonResolved, resolve.ResolvedMessage(in.Config), in.Generation))
			return verdict{}
		}, specHas(in.Class), target)
	if err != nil {
		return nil, err
	}
	if res.Outcome == PoolGone && a.landedBeforeGone(ctx, in) {
		res.Outcome = LandedThenGone
	}
	return res, nil
}

// RollBack abandons a claim: pendingConfigRef cleared, configRef unchanged,
// Resolved False with the reason the config was refused.
func (a *Activities) RollBack(ctx context.Context, in SettleInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepRollBack, in.Pool, in.Class, &err)
	if in.Reason == "" {
		return nil, invalidInput("rolling back a switch needs a reason, got %+v", in)
	}
	run := switchRun(ctx)
	// No claim (Protect or Claim refused the target), and nothing of this
	// run on the class: the roll back explains why the class keeps From, so
	// it is written only while the class is as the move was planned. A
	// stale plan, or a switch started by hand, is not this class's story,
	// and its stamp would later read as this run's confirm (P4).
	planned := func(ctx context.Context, pool *v1alpha1.WorkerPool) (*verdict, error) {
		st := pool.Status.ClassStatus(in.Class)
		if !in.Claimed && ownWriteOn(st, run, in.From, in.Config) == ownNone && !asPlanned(st, in) {
			a.logger(ctx).Warn("the class is not as the switch was planned; its roll back writes nothing",
				"pool", in.Pool.String(), "class", in.Class, "from", in.From, "to", in.Config)
			return &verdict{Outcome: Superseded}, nil
		}
		return nil, nil
	}
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("rolling back SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) verdict {
			st := pool.Status.ClassStatus(in.Class)
			// An earlier run of the switch's task confirmed (its own stamp
			// on the class, on the config): keep it, whatever made this
			// run roll back. A re-run whose Protect is refused (the target
			// deleted since the confirm) comes here without its claim.
			// Only this run's confirm can leave that state: a roll back
			// writes only on a class still on From (below).
			own := ownWriteOn(st, run, in.From, in.Config)
			if own == ownConfirm {
				return verdict{Outcome: Landed}
			}
			// The switch's own claim, known from the stamp even when the
			// workflow did not see it (a re-run refused before its Claim).
			if (in.Claimed || own == ownClaim) && !claimStands(st, in.Config, run) && !rolledBack(st, in, run) {
				return verdict{Outcome: Superseded} // another writer took the class since the claim
			}
			entry := poolstatus.EnsureClass(&pool.Status, in.Class)
			if claimStands(entry, in.Config, run) {
				entry.PendingConfigRef = nil // only this run's claim is its to clear
			}
			stamp(entry, run)
			poolstatus.SetClassCondition(&pool.Status, in.Class,
				poolstatus.ClassCondition(false, in.Reason, in.Message, in.Generation))
			var since *metav1.Time
			if c := meta.FindStatusCondition(entry.Conditions, v1alpha1.ConditionResolved); c != nil {
				since = c.LastTransitionTime.DeepCopy()
			}
			return verdict{FailingSince: since}
		}, specHas(in.Class), planned)
	if err != nil {
		return nil, err
	}
	// With or without its claim: a re-run whose Protect is refused
	// because the target went with the pool (kubectl delete -f of both)
	// comes here with its confirm maybe landed and unreported.
	if res.Outcome == PoolGone && a.landedBeforeGone(ctx, in) {
		res.Outcome = LandedThenGone
	}
	return res, nil
}

// rolledBack reports whether the class already shows this roll back (an
// earlier attempt landed, its completion lost): the claim cleared and the
// Resolved condition False with this reason and message.
func rolledBack(entry *v1alpha1.WorkerPoolSandboxClassStatus, in SettleInput, run *v1alpha1.SwitchRunReference) bool {
	if entry == nil {
		return false
	}
	c := meta.FindStatusCondition(entry.Conditions, v1alpha1.ConditionResolved)
	return entry.PendingConfigRef == nil && stampedBy(entry, run) && c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason == in.Reason && c.Message == in.Message
}

// claimStands reports whether the class holds run's claim on config.
func claimStands(st *v1alpha1.WorkerPoolSandboxClassStatus, config string, run *v1alpha1.SwitchRunReference) bool {
	return st != nil && st.PendingConfigRef.NameOf() == config && stampedBy(st, run)
}

// AbandonClaim clears a class's pendingConfigRef when it still names
// in.Config: a claim no switch works on. Conditions are left to the pool
// reconciler, which writes those of classes that need no switch.
func (a *Activities) AbandonClaim(ctx context.Context, in ClaimInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepAbandonClaim, in.Pool, in.Class, &err)
	if in.Config == "" {
		return nil, invalidInput("abandoning a claim needs the claimed config, got %+v", in)
	}
	return a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("clearing the stale claim on SandboxConfig %q of sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) verdict {
			if st := pool.Status.ClassStatus(in.Class); st != nil && st.PendingConfigRef != nil && st.PendingConfigRef.Name == in.Config {
				st.PendingConfigRef = nil
				stamp(st, switchRun(ctx))
			}
			return verdict{}
		}, specHas(in.Class))
}

// refusal is a guard's verdict that no retry can change: the call fails as
// invalid input, with nothing written.
type refusal string

func (r refusal) Error() string { return string(r) }

// specHas refuses a switch's write for a class the pool's spec does not
// have: class names are immutable, so only a switch started by hand asks
// it, and its write would create a status entry nothing clears.
func specHas(class v1alpha1.SandboxClass) guard {
	return func(_ context.Context, pool *v1alpha1.WorkerPool) (*verdict, error) {
		for _, entry := range pool.Spec.SandboxClasses {
			if entry.Name == class {
				return nil, nil
			}
		}
		return nil, refusal(fmt.Sprintf("WorkerPool %s/%s has no sandbox class %q in its spec: nothing written", pool.Namespace, pool.Name, class))
	}
}

// specConfigRef is the config the class's spec entry pins, "" when it
// follows the class default (or the spec lacks the class).
func specConfigRef(pool *v1alpha1.WorkerPool, class v1alpha1.SandboxClass) string {
	for _, entry := range pool.Spec.SandboxClasses {
		if entry.Name == class {
			return entry.ConfigRef.NameOf()
		}
	}
	return ""
}

// confirmState says, of a class's status, whether run's confirm to config
// landed already (the class on it, no claim, run's stamp) or is superseded
// (neither that nor run's claim on it: another writer took the class).
func confirmState(st *v1alpha1.WorkerPoolSandboxClassStatus, config string, run *v1alpha1.SwitchRunReference) (landed, superseded bool) {
	landed = st != nil && st.PendingConfigRef == nil && st.ConfigRef.NameOf() == config && stampedBy(st, run)
	return landed, !landed && !claimStands(st, config, run)
}

// liveTarget reads a confirm's target from the API server, never from a
// cache, and says whether a class may be moved onto it now: it exists, is
// of the class, is not in deletion and carries the protection finalizer.
func (a *Activities) liveTarget(ctx context.Context, name string, class v1alpha1.SandboxClass) (*TargetCheck, error) {
	c, err := a.ReadConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	check := checkTarget(name, c, class)
	if check.OK && !c.Protected {
		check = &TargetCheck{Reason: v1alpha1.ReasonSandboxConfigNotProtected,
			Message: fmt.Sprintf("SandboxConfig %q does not carry the finalizer %s", name, v1alpha1.ProtectionFinalizer)}
	}
	return check, nil
}
