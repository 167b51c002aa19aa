package kubectlate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// RequestTimeFormat is the format of a request's value: a UTC time of
// fixed width, so that values sort as strings in time order (the rollout
// takes the greater of a new pause and a new resume).
const RequestTimeFormat = "2006-01-02T15:04:05.000000000Z"

// requests are the request commands, each one merge patch of an annotation.
var requests = []requestKind{pauseRequest, resumeRequest, retryRequest, promoteRequest, abortRequest}

func newRequestCommand(o *options, k requestKind) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   k.verb + " NAME",
		Short: fmt.Sprintf("Ask the rollout of a SandboxConfig to %s: it %s", k.verb, k.does),
		Long: fmt.Sprintf(`Ask the rollout of the SandboxConfig to %s: it %s.

The request is one merge patch of the config's annotation %s, set to a new
value (the time, UTC, to the nanosecond): the rollout acts on each new value once and
records it in status.rollout. It needs patch on sandboxconfigs, nothing else.`, k.verb, k.does, k.annotation),
		Example: fmt.Sprintf("  kubectl ate rollout %s gvisor-v2\n  kubectl ate rollout status gvisor-v2 -w", k.verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			kind := k
			if full {
				kind = promoteFullRequest
			}
			cfg, value, err := Request(cmd.Context(), c, args[0], kind.annotation, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(o.streams.Out, "requested %s of the rollout of SandboxConfig %s (%s=%s): it %s\n",
				kind.verb, cfg.Name, kind.annotation, value, kind.does)
			if p := phaseOf(cfg); p == string(v1alpha1.RolloutCompleted) || p == string(v1alpha1.RolloutStopped) || p == string(v1alpha1.RolloutSuperseded) {
				fmt.Fprintf(o.streams.ErrOut, "warning: the rollout is %s: no rollout of SandboxConfig %s runs to act on it\n", p, cfg.Name)
			}
			fmt.Fprintf(o.streams.Out, "watch it: kubectl ate rollout status %s -w\n", cfg.Name)
			return nil
		},
	}
	if k.verb == promoteRequest.verb {
		cmd.Flags().BoolVar(&full, "full", false, "skip every remaining step, approval and bake: "+promoteFullRequest.does+" (annotation "+promoteFullRequest.annotation+")")
	}
	return cmd
}

// Request sets annotation on SandboxConfig name to a new request value, in
// one merge patch of metadata.annotations, and returns the config as the
// patch left it and the value. It refuses a config that does not exist or
// has no spec.rollout. The value is now, UTC, in RequestTimeFormat, made
// greater than every request value the config carries already: a clock
// behind the last requester's, or two requests within one nanosecond,
// still give a newer value, and a resume made after a pause wins over it.
func Request(ctx context.Context, c ctrlclient.Client, name, annotation string, now time.Time) (*v1alpha1.SandboxConfig, string, error) {
	cfg, err := getConfig(ctx, c, name)
	if err != nil {
		return nil, "", err
	}
	if cfg.Spec.Rollout == nil {
		return nil, "", fmt.Errorf("SandboxConfig %q has no spec.rollout: it has no staged rollout to drive", name)
	}
	at := now.UTC()
	for _, k := range requestKinds {
		// A value of another format (set by hand) is not compared: the
		// rollout acts on any new value.
		if t, err := time.Parse(RequestTimeFormat, cfg.Annotations[k.annotation]); err == nil && !t.Before(at) {
			at = t.Add(time.Nanosecond)
		}
	}
	value := at.Format(RequestTimeFormat)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: value}}})
	if err != nil {
		return nil, "", fmt.Errorf("building the patch of SandboxConfig %q: %w", name, err)
	}
	// The field manager names the plugin in the config's managedFields.
	if err := c.Patch(ctx, cfg, ctrlclient.RawPatch("application/merge-patch+json", patch), ctrlclient.FieldOwner("kubectl-ate")); err != nil {
		return nil, "", fmt.Errorf("patching annotation %s of SandboxConfig %q: %w", annotation, name, err)
	}
	return cfg, value, nil
}
