package rolloutplan

import (
	"context"
	"fmt"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

// ReadPreview reads what the preview of c needs from r (a live client, a
// cache, or the kubectl plugin's paginated reader): every SandboxConfig and
// the unpinned pools of c's class, and computes it with PreviewOf. c is
// the config as read from the cluster, or as a file would apply it.
func ReadPreview(ctx context.Context, r ctrlclient.Reader, c *v1alpha1.SandboxConfig) (*Preview, error) {
	// Listed here rather than with poolwatch.ListConfigs: wfapi, which
	// poolwatch's tests reach, imports this package for the plan's types.
	var list v1alpha1.SandboxConfigList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	configs := resolve.ConfigsFrom(list.Items)
	pools, err := rollout.ClassPools(ctx, r, c.Class())
	if err != nil {
		return nil, err
	}
	return PreviewOf(c, configs, rollout.Plain(pools)), nil
}
