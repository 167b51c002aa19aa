package activities

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// livePoolPageSize bounds one page of the live list of WorkerPools.
const livePoolPageSize = 500

// CachedUsers asks the worker's cache which pools name a config. It is the
// cheap first look: a hit means wait; a miss is confirmed by LiveUsers.
func (a *Activities) CachedUsers(ctx context.Context, config string) ([]string, error) {
	if config == "" {
		return nil, invalidInput("looking up the users of a SandboxConfig needs its name")
	}
	var pools v1alpha1.WorkerPoolList
	if err := a.Cache.List(ctx, &pools, ctrlclient.MatchingFields{poolwatch.StatusConfigIndex: config}); err != nil {
		return nil, fmt.Errorf("looking up WorkerPools naming SandboxConfig %q in the cache: %w", config, err)
	}
	return poolKeys(pools.Items, config), nil
}

// LiveUsers lists WorkerPools from the API server, page by page, bypassing
// every cache, and returns those whose status names the config. This list,
// made after the config was marked for deletion, is what allows a release (P2).
func (a *Activities) LiveUsers(ctx context.Context, config string) ([]string, error) {
	if config == "" {
		return nil, invalidInput("listing the users of a SandboxConfig needs its name")
	}
	var users []string
	cont := ""
	for {
		var page v1alpha1.WorkerPoolList
		if err := a.Live.List(ctx, &page, ctrlclient.Limit(livePoolPageSize), ctrlclient.Continue(cont)); err != nil {
			return nil, fmt.Errorf("listing WorkerPools live for SandboxConfig %q: %w", config, err)
		}
		users = append(users, poolKeys(page.Items, config)...)
		if cont = page.Continue; cont == "" {
			break
		}
	}
	sort.Strings(users)
	return users, nil
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
	ReleaseGone     = "gone"
	// ReleaseNotNeeded: the config is not in deletion or carries no finalizer.
	ReleaseNotNeeded = "not needed"
)

// Unprotect removes only the protection finalizer from a config in deletion,
// with a patch that carries the resourceVersion read: if the config changed
// since, the patch is refused and the workflow starts its checks again.
func (a *Activities) Unprotect(ctx context.Context, config string) (string, error) {
	if config == "" {
		return "", invalidInput("releasing a SandboxConfig needs its name")
	}
	var c v1alpha1.SandboxConfig
	if err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: config}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return ReleaseGone, nil
		}
		return "", fmt.Errorf("reading SandboxConfig %q to release it: %w", config, err)
	}
	if !c.IsDeleting() || !c.IsProtected() {
		return ReleaseNotNeeded, nil
	}
	base := c.DeepCopy()
	controllerutil.RemoveFinalizer(&c, v1alpha1.ProtectionFinalizer)
	err := a.Live.Patch(ctx, &c, ctrlclient.MergeFromWithOptions(base, ctrlclient.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return ReleaseRemoved, nil
	case apierrors.IsConflict(err):
		return ReleaseConflict, nil
	case apierrors.IsNotFound(err):
		return ReleaseGone, nil
	}
	return "", fmt.Errorf("removing finalizer %s from SandboxConfig %q: %w", v1alpha1.ProtectionFinalizer, config, err)
}

// WakeReleases wakes the release workflow of each named config that is in
// deletion and still protected: a switch that moved a class off a config, or
// dropped a claim on one, may have removed its last user.
func (a *Activities) WakeReleases(ctx context.Context, configs []string) error {
	for _, name := range configs {
		c, err := a.ReadConfig(ctx, name)
		if err != nil {
			return err
		}
		if c == nil || !c.Deleting || !c.Protected {
			continue
		}
		if err := wfapi.SignalRelease(ctx, a.Temporal, a.TaskQueue, name); err != nil {
			return err
		}
	}
	return nil
}
