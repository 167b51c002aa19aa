// Package poolwatch finds the WorkerPools a SandboxConfig event may affect,
// through indexes on a cache of pools. The starter and the worker's pool
// reconciler watch configs through it alike. The other way round, it tells
// waiters which classes' pools a WorkerPool event changed (NotifyClasses).
package poolwatch

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Indexes on a WorkerPool cache, so that a SandboxConfig event finds the
// pools it may affect without scanning every pool.
const (
	// UnpinnedClassIndex: the classes a pool follows the class default of.
	UnpinnedClassIndex = "spec.sandboxClasses.unpinned"
	// SpecConfigIndex: the configs a pool's spec names in configRef.
	SpecConfigIndex = "spec.sandboxClasses.configRef.name"
	// StatusConfigIndex: the configs a pool's status names, in configRef or
	// pendingConfigRef (a claimed config is in use too): the index the
	// release's first look uses.
	StatusConfigIndex = "status.sandboxClasses.sandboxConfig"
)

// Index sets up the indexes on a cache of WorkerPools.
func Index(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := map[string]client.IndexerFunc{
		UnpinnedClassIndex: func(obj client.Object) []string {
			return unpinnedClasses(obj.(*v1alpha1.WorkerPool))
		},
		SpecConfigIndex: func(obj client.Object) []string {
			var names []string
			for _, c := range obj.(*v1alpha1.WorkerPool).Spec.SandboxClasses {
				if c.ConfigRef != nil {
					names = append(names, c.ConfigRef.Name)
				}
			}
			return names
		},
		StatusConfigIndex: func(obj client.Object) []string {
			return obj.(*v1alpha1.WorkerPool).Status.ConfigNames()
		},
	}
	for name, fn := range indexes {
		if err := indexer.IndexField(ctx, &v1alpha1.WorkerPool{}, name, fn); err != nil {
			return fmt.Errorf("indexing WorkerPools by %s: %w", name, err)
		}
	}
	return nil
}

// unpinnedClasses are the classes whose default wp follows (its entries
// with no configRef): what UnpinnedClassIndex indexes it by.
func unpinnedClasses(wp *v1alpha1.WorkerPool) []string {
	var classes []string
	for _, c := range wp.Spec.SandboxClasses {
		if c.ConfigRef == nil {
			classes = append(classes, string(c.Name))
		}
	}
	return classes
}
