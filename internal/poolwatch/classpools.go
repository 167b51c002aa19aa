package poolwatch

import (
	"context"
	"fmt"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// ClassPools is rollout.ClassPools read from a cache with the indexes of
// Index: the pools of the class's unpinned entry (UnpinnedClassIndex), in
// rollout order, without those in deletion. The cache hands over only
// those pools, its own objects (only read, never copied), so a look at a
// class costs the class's pools, not the fleet. The rollout's activities
// read the worker's cache through it; a reader without the index gets an
// error that names it.
func ClassPools(ctx context.Context, cache ctrlclient.Reader, class v1alpha1.SandboxClass) ([]rollout.ClassPool, error) {
	var list v1alpha1.WorkerPoolList
	if err := cache.List(ctx, &list, ctrlclient.MatchingFields{UnpinnedClassIndex: string(class)}, ctrlclient.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the unpinned WorkerPools of sandbox class %q from the cache by its index %s: %w", class, UnpinnedClassIndex, err)
	}
	return rollout.ClassPoolsOf(list.Items, class), nil
}
