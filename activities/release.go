package activities

import (
	"context"
	"fmt"
	"sort"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// livePoolPageSize bounds one page of the live list of WorkerPools.
const livePoolPageSize = 500

// UserSampleSize is how many users of a config a release records by name:
// its history and its `state` query carry the count and this many keys, not
// every user's key (a config under 5000 pools would otherwise put 5000 keys
// in each look's history).
const UserSampleSize = 10

// Users are the pools whose status names a config: how many, and the
// first UserSampleSize of them by key.
type Users struct {
	Count  int      `json:"count"`
	Sample []string `json:"sample,omitempty"`
}

// add counts keys and keeps the sample's smallest keys.
func (u *Users) add(keys []string) {
	u.Count += len(keys)
	u.Sample = append(u.Sample, keys...)
	sort.Strings(u.Sample)
	if len(u.Sample) > UserSampleSize {
		u.Sample = u.Sample[:UserSampleSize]
	}
}

// CachedUsers asks the worker's cache which pools name a config. It is the
// cheap first look: a hit means wait; a miss is confirmed by Unprotect's
// live list. A hit on a config in deletion whose pools stay on it because
// the class's rolling-out default has not admitted them also records the
// Warning that says so, once per step of that rollout (warnDeletingWaits).
func (a *Activities) CachedUsers(ctx context.Context, config string) (Users, error) {
	if config == "" {
		return Users{}, invalidInput("looking up the users of a SandboxConfig needs its name")
	}
	var pools v1alpha1.WorkerPoolList
	// Read for their keys only: the cache's own objects, not copies.
	if err := a.Cache.List(ctx, &pools, ctrlclient.MatchingFields{poolwatch.StatusConfigIndex: config}, ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return Users{}, fmt.Errorf("looking up WorkerPools naming SandboxConfig %q in the cache: %w", config, err)
	}
	var u Users
	u.add(poolKeys(pools.Items, config))
	if u.Count > 0 {
		a.warnDeletingWaits(ctx, config, pools.Items)
	}
	return u, nil
}

// LiveListProgress is the heartbeat of Unprotect's live list: the
// incarnation of the config it was started after (its UID and
// resourceVersion, read with the deletion mark), where the list is (the
// continue token of the next page) and what the pages before it found. A
// retry that reads the same incarnation at the same resourceVersion resumes
// from it.
type LiveListProgress struct {
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Continue        string    `json:"continue"`
	Pages           int       `json:"pages"`
	Users           Users     `json:"users"`
}

// listPoolsLive lists WorkerPools live from p (a fresh list when
// p.Continue is empty) to the end, adding the users of config to p and
// reporting p after each page.
func listPoolsLive(ctx context.Context, live ctrlclient.Reader, config string, p *LiveListProgress, report func(LiveListProgress)) error {
	for {
		var page v1alpha1.WorkerPoolList
		err := live.List(ctx, &page, ctrlclient.Limit(livePoolPageSize), ctrlclient.Continue(p.Continue))
		if err != nil && p.Continue != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || apierrors.IsBadRequest(err)) {
			// The token is too old (or not one this API server takes):
			// the list starts again, a new snapshot, still after the mark.
			*p = LiveListProgress{UID: p.UID, ResourceVersion: p.ResourceVersion}
			continue
		}
		if err != nil {
			return fmt.Errorf("listing WorkerPools live for SandboxConfig %q (page %d): %w", config, p.Pages+1, err)
		}
		p.Users.add(poolKeys(page.Items, config))
		p.Pages++
		p.Continue = page.Continue
		if p.Continue == "" {
			return nil
		}
		report(*p)
	}
}

func poolKeys(pools []v1alpha1.WorkerPool, config string) []string {
	var keys []string
	for i := range pools {
		for _, name := range pools[i].Status.ConfigNames() {
			if name == config {
				keys = append(keys, wfapi.PoolKey(pools[i].Namespace, pools[i].Name))
				break
			}
		}
	}
	return keys
}

// Release results.
const (
	ReleaseRemoved  = "removed"
	ReleaseConflict = "conflict"
	// ReleaseGone: the config is gone, or the name now holds another
	// incarnation (another UID) than the one the release looked at.
	ReleaseGone = "gone"
	// ReleaseNotNeeded: the config is not in deletion or carries no finalizer.
	ReleaseNotNeeded = "not needed"
	// ReleaseInUse: Unprotect's live list found a pool naming the config;
	// nothing was removed, and the release waits.
	ReleaseInUse = "in use"
)

// UnprotectInput names the incarnation of a config a release looked at:
// its name, and the UID and resourceVersion its live read (ReadConfig)
// returned. An input without them (scheduled by anything but a release)
// releases whatever the name holds, after the same checks.
type UnprotectInput struct {
	Config          string    `json:"config"`
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
}

// UnprotectResult is what Unprotect did (Release*), and, when it refused
// because its live list found users (ReleaseInUse), who they are.
type UnprotectResult struct {
	Result string `json:"result"`
	Users  Users  `json:"users,omitempty"`
}

// Unprotect removes only the protection finalizer from a config in
// deletion, and only from the incarnation the release looked at. It holds
// P2 itself, whoever schedules it, and its live list is the release's only
// one: it reads the config live, refuses another incarnation (ReleaseGone
// for the one looked at), then lists every WorkerPool live, page by page,
// bypassing every cache (after that read showed the deletion mark), and
// refuses while any pool's status names the config (ReleaseInUse, with the
// users), and removes the finalizer with a patch that carries the
// resourceVersion the release read (or, without one, the one it read
// itself): if the config changed since, the patch is refused and the
// workflow starts its checks again. A retry after a landed patch finds the
// config gone, without the finalizer, or another incarnation: never one it
// may strip.
//
// The list heartbeats after each page with its progress, and an attempt
// that is retried (its worker died, its heartbeat timed out) and reads the
// same incarnation at the same resourceVersion resumes from the last page
// reported: the pages of one list are one snapshot of the API server,
// taken at its first page, after the deletion mark. A continue token the
// API server no longer takes (410 Expired: compacted) restarts the list.
func (a *Activities) Unprotect(ctx context.Context, in UnprotectInput) (UnprotectResult, error) {
	if in.Config == "" {
		return UnprotectResult{}, invalidInput("releasing a SandboxConfig needs its name")
	}
	config := in.Config
	var c v1alpha1.SandboxConfig
	if err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: config}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return UnprotectResult{Result: ReleaseGone}, nil
		}
		return UnprotectResult{}, fmt.Errorf("reading SandboxConfig %q to release it: %w", config, err)
	}
	if in.UID != "" && c.UID != in.UID {
		return UnprotectResult{Result: ReleaseGone}, nil
	}
	if !c.IsDeleting() || !c.IsProtected() {
		return UnprotectResult{Result: ReleaseNotNeeded}, nil
	}
	if in.ResourceVersion != "" && c.ResourceVersion != in.ResourceVersion {
		return UnprotectResult{Result: ReleaseConflict}, nil
	}
	p := LiveListProgress{UID: c.UID, ResourceVersion: c.ResourceVersion}
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		var earlier LiveListProgress
		if err := activity.GetHeartbeatDetails(ctx, &earlier); err == nil && earlier.UID == c.UID && earlier.ResourceVersion == c.ResourceVersion {
			p = earlier
		}
	}
	if err := listPoolsLive(ctx, a.Live, config, &p, func(p LiveListProgress) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, p)
		}
	}); err != nil {
		return UnprotectResult{}, err
	}
	if p.Users.Count > 0 {
		return UnprotectResult{Result: ReleaseInUse, Users: p.Users}, nil
	}
	base := c.DeepCopy()
	controllerutil.RemoveFinalizer(&c, v1alpha1.ProtectionFinalizer)
	err := a.Live.Patch(ctx, &c, ctrlclient.MergeFromWithOptions(base, ctrlclient.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return UnprotectResult{Result: ReleaseRemoved}, nil
	case apierrors.IsConflict(err):
		return UnprotectResult{Result: ReleaseConflict}, nil
	case apierrors.IsNotFound(err):
		return UnprotectResult{Result: ReleaseGone}, nil
	}
	return UnprotectResult{}, fmt.Errorf("removing finalizer %s from SandboxConfig %q: %w", v1alpha1.ProtectionFinalizer, config, err)
}
