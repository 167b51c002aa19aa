package starterapp

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
)

// Indexes on the starter's WorkerPool cache, so that a SandboxConfig event
// finds the pools it may affect without scanning every pool.
const (
	// unpinnedClassIndex: the classes a pool follows the class default of.
	unpinnedClassIndex = "spec.sandboxClasses.unpinned"
	// specConfigIndex: the configs a pool's spec names in configRef.
	specConfigIndex = "spec.sandboxClasses.configRef.name"
)

func indexPools(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := map[string]client.IndexerFunc{
		unpinnedClassIndex: func(obj client.Object) []string {
			var classes []string
			for _, c := range obj.(*v1alpha1.WorkerPool).Spec.SandboxClasses {
				if c.ConfigRef == nil {
					classes = append(classes, string(c.Name))
				}
			}
			return classes
		},
		specConfigIndex: func(obj client.Object) []string {
			var names []string
			for _, c := range obj.(*v1alpha1.WorkerPool).Spec.SandboxClasses {
				if c.ConfigRef != nil {
					names = append(names, c.ConfigRef.Name)
				}
			}
			return names
		},
		activities.PoolsByConfigIndex: activities.IndexPoolsByConfig,
	}
	for name, fn := range indexes {
		if err := indexer.IndexField(ctx, &v1alpha1.WorkerPool{}, name, fn); err != nil {
			return fmt.Errorf("indexing WorkerPools by %s: %w", name, err)
		}
	}
	return nil
}
