package teardown

import (
	"context"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/options"
)

// Main is the teardown command, as cmd/teardown's flags configure it: Run
// on the API server the options name.
func Main(ctx context.Context, opts options.Options) (Report, error) {
	cfg, err := opts.RestConfig()
	if err != nil {
		return Report{}, err
	}
	c, err := kube.LiveClient(cfg)
	if err != nil {
		return Report{}, err
	}
	return Run(ctx, c)
}
