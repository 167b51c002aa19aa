package rolloutplan

import (
	"context"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/rollout"
)

// ReadPreview reads what the preview of c needs from r (a live client, a
// cache, or the kubectl plugin's paginated reader): every SandboxConfig and
// the unpinned pools of c's class, and computes it with PreviewOf. c is
// the config as read from the cluster, or as a file would apply it.
func ReadPreview(ctx context.Context, r ctrlclient.Reader, c *v1alpha1.SandboxConfig) (*Preview, error) {
	configs, err := poolwatch.ListConfigs(ctx, r)
	if err != nil {
		return nil, err
	}
	pools, err := rollout.ClassPools(ctx, r, c.Class())
	if err != nil {
		return nil, err
	}
	return PreviewOf(c, configs, rollout.Plain(pools)), nil
}
