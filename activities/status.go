package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
)

// PoolWrite is the result of a status write.
type PoolWrite struct {
	// PoolGone is true when the pool no longer exists, or is a new pool
	// under the same name: nothing was written and the workflow should stop
	// acting for it.
	PoolGone bool `json:"poolGone,omitempty"`
	// Wrote is true when this call changed the status. A retried call whose
	// first attempt landed reports false.
	Wrote bool `json:"wrote,omitempty"`
	// Displaced is a claim this write replaced (see Claim).
	Displaced string `json:"displaced,omitempty"`
	// Landed comes with PoolGone from a retried Confirm whose earlier
	// attempt had moved the class before the pool went: the switch did
	// happen, so its event is still due.
	Landed bool `json:"landed,omitempty"`
	// FailingSince is the lastTransitionTime of the class's Resolved
	// condition after a RollBack of a lean switch, when it is False: the
	// appearance of the failure its Warning reports (see FailureWarning).
	FailingSince *metav1.Time `json:"failingSince,omitempty"`
	// Superseded comes from a Claim that expected the class on a config and
	// found it elsewhere: another switch moved it since the move was
	// decided; or from a Confirm or RollBack of a claim that the class's
	// pendingConfigRef no longer names (another switch claimed, confirmed
	// or cleared since). Nothing was written.
	Superseded bool `json:"superseded,omitempty"`
	// ResourceVersion is the pool's resourceVersion after this call: the
	// write's, or the one read when there was nothing to write. The next
	// status write of the switch passes it on (see updateStatus).
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// confirmLanded is the heartbeat detail of a Confirm whose write landed.
const confirmLanded = "landed"

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
func (a *Activities) updateStatus(ctx context.Context, ref PoolRef, known, what string, mutate func(*v1alpha1.WorkerPool)) (*PoolWrite, error) {
	if err := validatePool(ref); err != nil {
		return nil, err
	}
	if err := checkCaller(ctx, ref); err != nil {
		return nil, err
	}
	res := &PoolWrite{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		*res = PoolWrite{}
		var pool v1alpha1.WorkerPool
		if !a.cachedAt(ctx, ref, known, &pool) {
			if err := a.Live.Get(ctx, poolKey(ref), &pool); err != nil {
				if apierrors.IsNotFound(err) {
					res.PoolGone = true
					return nil
				}
				return err
			}
		}
		known = "" // a conflict reads live
		if ref.UID != "" && string(pool.UID) != ref.UID {
			res.PoolGone = true
			return nil
		}
		before := pool.Status.DeepCopy()
		mutate(&pool)
		clearStepFailures(&pool.Status)
		poolstatus.SetSummary(&pool)
		if equality.Semantic.DeepEqual(before, &pool.Status) {
			res.ResourceVersion = pool.ResourceVersion
			return nil
		}
		if err := a.Live.Status().Update(ctx, &pool); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted since it was read (or since the cached version).
				res.PoolGone = true
				return nil
			}
			return err
		}
		res.Wrote, res.ResourceVersion = true, pool.ResourceVersion
		return nil
	})
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

// cachedAt reads the pool from the worker's cache into pool when the cache
// holds the incarnation ref names at resourceVersion rv.
func (a *Activities) cachedAt(ctx context.Context, ref PoolRef, rv string, pool *v1alpha1.WorkerPool) bool {
	if rv == "" || a.Cache == nil {
		return false
	}
	if err := a.Cache.Get(ctx, poolKey(ref), pool); err != nil {
		return false
	}
	return pool.ResourceVersion == rv && (ref.UID == "" || string(pool.UID) == ref.UID)
}

// ClaimInput claims a config for a class of a pool.
type ClaimInput struct {
	Pool   PoolRef               `json:"pool"`
	Class  v1alpha1.SandboxClass `json:"class"`
	Config string                `json:"config"`
	// ResourceVersion is the pool's as the pass observed it, or "" (claims
	// recorded before it existed): see updateStatus.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// ExpectFrom makes the claim conditional: it is written only while the
	// class's status still names From (none when From is ""), the config
	// the move was decided from. A lean switch decides on the starter's
	// cache, which may be behind another switch of the pool.
	ExpectFrom bool   `json:"expectFrom,omitempty"`
	From       string `json:"from,omitempty"`
}

// Claim records the config a class is moving to in pendingConfigRef, with
// configRef unchanged. From this write on, the release workflow sees the pool
// as a user of the config, so the live read that follows can trust what it
// sees (see the README's "Switching configs").
func (a *Activities) Claim(ctx context.Context, in ClaimInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepClaim, in.Pool, in.Class, &err)
	var displaced string
	var superseded bool
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("claiming SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) {
			displaced, superseded = "", false
			if in.ExpectFrom {
				current := ""
				if st := pool.Status.ClassStatus(in.Class); st != nil && st.ConfigRef != nil {
					current = st.ConfigRef.Name
				}
				if current != in.From {
					superseded = true
					return
				}
			}
			entry := poolstatus.EnsureClass(&pool.Status, in.Class)
			if p := entry.PendingConfigRef; p != nil && p.Name != in.Config && (entry.ConfigRef == nil || p.Name != entry.ConfigRef.Name) {
				displaced = p.Name
			}
			entry.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: in.Config}
		})
	if res != nil && !res.PoolGone {
		res.Displaced, res.Superseded = displaced, superseded
	}
	return res, err
}

// SettleInput ends a switch: a confirm moves configRef to the claimed config,
// a roll back keeps configRef; both clear the claim and set the Resolved
// condition.
type SettleInput struct {
	Pool       PoolRef               `json:"pool"`
	Class      v1alpha1.SandboxClass `json:"class"`
	Config     string                `json:"config"`
	Generation int64                 `json:"generation"`
	// Reason and Message of the Resolved condition of a roll back.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// ResourceVersion is the pool's as the switch's claim left it, or "":
	// see updateStatus.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Local says the step runs as a local activity of a lean switch: a
	// crash re-runs the whole workflow task, so an earlier run of this very
	// step may have written whatever the attempt number says.
	Local bool `json:"local,omitempty"`
	// Claimed says the switch's claim stands (a roll back after the claim,
	// not after a refused protection). Between its claim and its end only
	// the switch writes the class's configRef, so a roll back that finds
	// the class on the config knows an earlier run confirmed it.
	Claimed bool `json:"claimed,omitempty"`
}

// Confirm moves the class to the claimed config: configRef = the config,
// pendingConfigRef cleared, Resolved True, in one write.
func (a *Activities) Confirm(ctx context.Context, in SettleInput) (_ *PoolWrite, err error) {
	defer a.reportStepFailure(ctx, StepConfirm, in.Pool, in.Class, &err)
	if in.Config == "" {
		return nil, invalidInput("confirming a switch needs the config, got %+v", in)
	}
	var superseded bool
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("confirming SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) {
			st := pool.Status.ClassStatus(in.Class)
			// The claim still stands, or an earlier attempt of this confirm
			// landed (the same write again changes nothing). Anything else:
			// another writer took the class since the claim, and this
			// config may have been released meanwhile.
			landed := st != nil && st.PendingConfigRef == nil && st.ConfigRef.NameOf() == in.Config
			if superseded = !landed && (st == nil || st.PendingConfigRef.NameOf() != in.Config); superseded {
				return
			}
			entry := poolstatus.EnsureClass(&pool.Status, in.Class)
			entry.ConfigRef = &v1alpha1.SandboxConfigReference{Name: in.Config}
			entry.PendingConfigRef = nil
			_, reason, msg := resolve.CheckTarget(in.Config, &resolve.Config{Class: in.Class}, in.Class)
			poolstatus.SetClassCondition(&pool.Status, in.Class,
				poolstatus.ClassCondition(true, reason, msg, in.Generation))
		})
	if err != nil {
		return res, err
	}
	if superseded && !res.PoolGone {
		res.Superseded = true
		return res, nil
	}
	// If this attempt's completion is lost (the worker dies now) and the
	// pool is gone by the retry, the retry cannot read the write back: it
	// learns from this heartbeat that the class did move.
	if res.Wrote && activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, confirmLanded)
	}
	if res.PoolGone {
		res.Landed = a.landedBeforeGone(ctx, in)
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
	var confirmed, superseded bool
	var since *metav1.Time
	res, err := a.updateStatus(ctx, in.Pool, in.ResourceVersion, fmt.Sprintf("rolling back SandboxConfig %q for sandbox class %q", in.Config, in.Class),
		func(pool *v1alpha1.WorkerPool) {
			entry := poolstatus.EnsureClass(&pool.Status, in.Class)
			confirmed = in.Local && in.Claimed && entry.PendingConfigRef == nil &&
				entry.ConfigRef != nil && entry.ConfigRef.Name == in.Config
			if confirmed {
				return // an earlier run of the switch's task confirmed: keep it
			}
			if superseded = in.Claimed && entry.PendingConfigRef.NameOf() != in.Config && !rolledBack(entry, in); superseded {
				return // another writer took the class since the claim
			}
			if entry.PendingConfigRef != nil && entry.PendingConfigRef.Name == in.Config {
				entry.PendingConfigRef = nil
			}
			poolstatus.SetClassCondition(&pool.Status, in.Class,
				poolstatus.ClassCondition(false, in.Reason, in.Message, in.Generation))
			if c := meta.FindStatusCondition(entry.Conditions, v1alpha1.ConditionResolved); c != nil {
				since = c.LastTransitionTime.DeepCopy()
			}
		})
	if err != nil {
		return res, err
	}
	if superseded && !res.PoolGone {
		res.Superseded = true
		return res, nil
	}
	if in.Local {
		res.FailingSince = since
	}
	switch {
	case confirmed:
		res.Landed = true
	case res.PoolGone && in.Local && in.Claimed:
		res.Landed = a.landedBeforeGone(ctx, in)
	}
	return res, nil
}

// rolledBack reports whether the class already shows this roll back (an
// earlier attempt landed, its completion lost): the claim cleared and the
// Resolved condition False with this reason and message.
func rolledBack(entry *v1alpha1.WorkerPoolSandboxClassStatus, in SettleInput) bool {
	c := meta.FindStatusCondition(entry.Conditions, v1alpha1.ConditionResolved)
	return entry.PendingConfigRef == nil && c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason == in.Reason && c.Message == in.Message
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
		func(pool *v1alpha1.WorkerPool) {
			if st := pool.Status.ClassStatus(in.Class); st != nil && st.PendingConfigRef != nil && st.PendingConfigRef.Name == in.Config {
				st.PendingConfigRef = nil
			}
		})
}
