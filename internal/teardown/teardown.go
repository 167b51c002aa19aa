// Package teardown removes the protection finalizer from every
// SandboxConfig, for uninstalling: once the product and its CRDs are being
// removed, nothing is left to release the finalizer, and a config a pool had
// used would stay Terminating and keep the CRD from finishing its deletion.
package teardown

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Report says what a teardown did.
type Report struct {
	// Released are the configs the finalizer was removed from.
	Released []string
	// Skipped are the configs that did not carry it.
	Skipped []string
	// NoCRD is true when the SandboxConfig CRD is not installed: nothing to do.
	NoCRD bool
}

func (r Report) String() string {
	if r.NoCRD {
		return "the SandboxConfig CRD is not installed; nothing to do"
	}
	return fmt.Sprintf("removed %s from %d SandboxConfig(s) %v; %d had none %v",
		v1alpha1.ProtectionFinalizer, len(r.Released), r.Released, len(r.Skipped), r.Skipped)
}

// Run removes the protection finalizer from every SandboxConfig, keeping
// every other finalizer. A conflict re-reads the config and tries again.
func Run(ctx context.Context, c client.Client) (Report, error) {
	var rep Report
	var configs v1alpha1.SandboxConfigList
	if err := c.List(ctx, &configs); err != nil {
		if meta.IsNoMatchError(err) {
			rep.NoCRD = true
			return rep, nil
		}
		return rep, fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	for _, item := range configs.Items {
		if !item.IsProtected() {
			rep.Skipped = append(rep.Skipped, item.Name)
			continue
		}
		key := client.ObjectKeyFromObject(&item)
		removed := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cfg v1alpha1.SandboxConfig
			if err := c.Get(ctx, key, &cfg); err != nil {
				return client.IgnoreNotFound(err)
			}
			base := cfg.DeepCopy()
			if !controllerutil.RemoveFinalizer(&cfg, v1alpha1.ProtectionFinalizer) {
				return nil
			}
			if err := c.Patch(ctx, &cfg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
				return client.IgnoreNotFound(err)
			}
			removed = true
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("removing %s from SandboxConfig %q: %w", v1alpha1.ProtectionFinalizer, item.Name, err)
		}
		if removed {
			rep.Released = append(rep.Released, item.Name)
		} else {
			rep.Skipped = append(rep.Skipped, item.Name)
		}
	}
	return rep, nil
}
