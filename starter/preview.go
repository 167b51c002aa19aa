package starter

import (
	"context"
	"fmt"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rolloutplan"
)

// PreviewResult is what `ate-starter preview` prints: the pools each step
// of a config's rollout would move, and the pools that would move off it if
// it lost the annotation. It is rolloutplan.Preview, which `kubectl ate
// rollout preview` prints too: one implementation of what a preview
// decides and how it reads.
type PreviewResult = rolloutplan.Preview

// Preview computes a config's preview from r (a live client or a cache).
func Preview(ctx context.Context, r ctrlclient.Reader, name string) (*PreviewResult, error) {
	var c v1alpha1.SandboxConfig
	if err := r.Get(ctx, ctrlclient.ObjectKey{Name: name}, &c); err != nil {
		return nil, fmt.Errorf("reading SandboxConfig %q: %w", name, err)
	}
	return rolloutplan.ReadPreview(ctx, r, &c)
}
