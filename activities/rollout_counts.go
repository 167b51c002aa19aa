package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/rollout"
)

// KeepCountsBound is the longest one KeepRolloutCounts runs before it
// returns and the rollout starts it again: a hold of days costs its
// history a few events an hour.
const KeepCountsBound = time.Hour

// keepCountsHeartbeat is how often KeepRolloutCounts heartbeats while no
// pool of its class changes, within the heartbeat timeout the workflow
// gives it: it is also how soon it hears that the rollout cancelled it.
const keepCountsHeartbeat = 2 * time.Second

// Why KeepRolloutCounts returned.
const (
	// CountsBound: it ran KeepCountsBound; the rollout starts it again.
	CountsBound = "Bound"
	// CountsGone: the config is gone, or is another incarnation; the
	// rollout's next look says so.
	CountsGone = "Gone"
	// CountsCancelled: the rollout cancelled it (it looks, or goes on).
	CountsCancelled = "Cancelled"
)

// KeepCountsInput asks KeepRolloutCounts to keep the counts of the
// rollout of Config (the incarnation UID) current.
type KeepCountsInput struct {
	Config string    `json:"config"`
	UID    types.UID `json:"uid,omitempty"`
}

// KeepRolloutCounts keeps status.rollout's counts (admittedPools,
// movedPools, totalPools) current while the rollout waits on something
// other than its pools: a hold (Paused, Halted, Aborted, RolledBack), an
// approval, a bake. The rollout writes its counts with every status write,
// and a step's wait as its pools move; a hold writes none, yet pools move
// under it: an abort's and a roll back's go back to the config they came
// from, and pools are created, deleted and relabelled in the class whatever
// the rollout does. Without this, the counts of an aborted rollout would
// say its pools are still on it long after the last went back.
//
// It counts the class's pools in the worker's cache, woken by their events
// (Activities.PoolEvents; every rolloutPollInterval without), against the
// admission it last read live, and patches the counts only when they
// differ from what status says: a hold where nothing moves costs the API
// server nothing. Its patches are bound to the resourceVersion of that
// read, so a patch never lands on a status the rollout rewrote since (an
// admission lifted by a retry, a new step): the API server refuses it, and
// the next look reads the config again and counts against the new
// admission. It runs until cancelled (the rollout looks, or goes on), or
// for KeepCountsBound (CountsBound), or until the config is gone
// (CountsGone).
func (a *Activities) KeepRolloutCounts(ctx context.Context, in KeepCountsInput) (string, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return "", err
	}
	cache, err := a.rolloutCache()
	if err != nil {
		return "", err
	}
	poll := a.rolloutPoll
	if poll <= 0 {
		poll = rolloutPollInterval
	}
	end := time.Now().Add(KeepCountsBound)
	var c *v1alpha1.SandboxConfig // the last live read; nil: read again
	var changed <-chan struct{}
	for look := true; time.Now().Before(end); {
		if look {
			var gone bool
			switch c, changed, gone, err = a.keepCounts(ctx, cache, in, c); {
			case err != nil && ctx.Err() != nil:
				return cancelled(ctx, err)
			case err != nil:
				return "", err
			case gone:
				return CountsGone, nil
			}
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, nil)
		}
		if look, err = nextCount(ctx, changed, poll); err != nil {
			return cancelled(ctx, err)
		}
	}
	return CountsBound, nil
}

// cancelled ends KeepRolloutCounts on err, its context's end. Cancelled by
// the rollout, or its run ended (the rollout does not wait for it to hear
// its cancellation), that is its expected end: no error, which the SDK
// would log as the activity's. Any other end (the worker stopping) is an
// error, and the activity is run again.
func cancelled(ctx context.Context, err error) (string, error) {
	var gone *serviceerror.NotFound
	if cause := context.Cause(ctx); temporal.IsCanceledError(cause) || errors.As(cause, &gone) {
		return CountsCancelled, nil
	}
	return "", err
}

// keepCounts counts the class's pools against c, the config as last read
// (nil: read it now), and patches the counts if status says otherwise. It
// returns the config to count against next (nil: read it again), and the
// wake-up of the next event of the class's pools, asked for before it
// counted; gone when the config is (or is another incarnation).
func (a *Activities) keepCounts(ctx context.Context, cache ctrlclient.Reader, in KeepCountsInput, c *v1alpha1.SandboxConfig) (
	next *v1alpha1.SandboxConfig, changed <-chan struct{}, gone bool, err error) {
	for {
		if c == nil {
			if c, err = a.rollingConfig(ctx, in.Config); err != nil {
				return nil, nil, false, err
			}
			if c == nil || (in.UID != "" && c.UID != in.UID) {
				return nil, nil, true, nil // the rollout's next look says so
			}
		}
		changed = a.PoolEvents.Changed(string(c.Class()))
		counts, err := countClass(ctx, cache, c, rollout.AdmissionOf(c))
		if err != nil {
			return nil, nil, false, err
		}
		if st := c.Status.Rollout; st == nil || counts.written(st) {
			return c, changed, false, nil // up to date; or no status of the run's to keep
		}
		switch err := a.patchRolloutRawAt(ctx, c.Name, c.UID, c.ResourceVersion, counts.into(map[string]any{})); {
		case apierrors.IsConflict(err):
			c = nil // written since the read: count against what it says now
		case err != nil:
			return nil, nil, false, fmt.Errorf("keeping the rollout counts of SandboxConfig %q: %w", in.Config, err)
		default:
			// The patch changed its resourceVersion: the next count
			// that differs reads it again.
			return nil, changed, false, nil
		}
	}
}

// nextCount waits for the next look: a change of the class's pools
// (changed closed), at most one look per rolloutPollInterval while they
// flow; or, with no pool events to wait for, poll. It returns after
// keepCountsHeartbeat with look false when neither came, for a heartbeat.
func nextCount(ctx context.Context, changed <-chan struct{}, poll time.Duration) (look bool, err error) {
	wait := keepCountsHeartbeat
	if changed == nil {
		wait = min(wait, poll)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-timer.C:
		return changed == nil, nil
	case <-changed:
	}
	// A burst of events is counted once.
	gap := time.NewTimer(rolloutPollInterval)
	defer gap.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-gap.C:
		return true, nil
	}
}

// poolCounts are status.rollout's counts: the pools the rollout lets move
// (on the config, or admitted), those on the config, and the class's
// unpinned pools. Every write of the rollout's status carries them.
type poolCounts struct{ admitted, moved, total int }

// countClass counts the class's unpinned pools of c, as the worker's cache
// shows them, against adm.
func countClass(ctx context.Context, cache ctrlclient.Reader, c *v1alpha1.SandboxConfig, adm *rollout.Admission) (poolCounts, error) {
	pools, err := poolwatch.ClassPools(ctx, cache, c.Class())
	if err != nil {
		return poolCounts{}, err
	}
	admitted, moved := rollout.Count(rollout.Plain(pools), c.Name, adm)
	return poolCounts{admitted: admitted, moved: moved, total: len(pools)}, nil
}

// into sets the counts in a patch of status.rollout's fields.
func (n poolCounts) into(fields map[string]any) map[string]any {
	fields["admittedPools"], fields["movedPools"], fields["totalPools"] = n.admitted, n.moved, n.total
	return fields
}

// written reports whether st already says them.
func (n poolCounts) written(st *v1alpha1.RolloutStatus) bool {
	return int(st.AdmittedPools) == n.admitted && int(st.MovedPools) == n.moved && int(st.TotalPools) == n.total
}
