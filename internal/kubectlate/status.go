package kubectlate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

func newStatusCommand(o *options) *cobra.Command {
	var (
		follow  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show where the rollout of a SandboxConfig stands, or watch it",
		Long: `Show the phase of the SandboxConfig's staged rollout, the step it is at, its pools
moved, admitted and total, its message, the requests not acted on yet, and, when a
person's action moves it on (AwaitingApproval, Paused, Halted, Aborted, RolledBack), the command
that does. A rollout whose first step waits for other clusters (AwaitingClusters,
spec.rollout.after) lists each cluster it waits for, its rollout's phase there and why.

With -w it watches the config (a Kubernetes watch) and prints a line per change until
the rollout ends (Completed, Halted, Aborted, RolledBack, Stopped, Superseded) or --timeout passes.

Exit codes:
  0  the rollout is Completed, or the config has no rollout; without -w also while
     it is in progress (Progressing, Paused, AwaitingApproval, AwaitingClusters,
     Baking, or not started)
  1  the rollout is Halted, Stopped, Aborted, RolledBack or Superseded, or the command failed
     (the config does not exist, the API server cannot be reached)
  2  -w: --timeout passed first`,
		Example: `  kubectl ate rollout status gvisor-v2
  kubectl ate rollout status gvisor-v2 -w --timeout 30m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !follow {
				cfg, err := getConfig(ctx, c, args[0])
				if err != nil {
					return err
				}
				printStatus(o.streams.Out, cfg)
				if code, _ := outcome(cfg); code != ExitOK {
					return &exitError{code: code}
				}
				return nil
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			cfg, err := watchStatus(ctx, c, args[0], o.streams.Out)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				return &exitError{code: ExitTimeout, err: fmt.Errorf("timed out after %s waiting for the rollout of SandboxConfig %q to end", timeout, args[0])}
			case err != nil:
				return err
			}
			if n := next(cfg); n != "" {
				fmt.Fprintf(o.streams.Out, "next: %s\n", n)
			}
			if code, _ := outcome(cfg); code != ExitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "watch", "w", false, "watch the rollout, a line per change, until it ends")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with -w, how long to wait before exiting 2 (0: no limit)")
	return cmd
}

// getConfig reads a SandboxConfig, with an error that names it.
func getConfig(ctx context.Context, c ctrlclient.Reader, name string) (*v1alpha1.SandboxConfig, error) {
	var cfg v1alpha1.SandboxConfig
	if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, &cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("SandboxConfig %q not found", name)
		}
		return nil, fmt.Errorf("reading SandboxConfig %q: %w", name, err)
	}
	return &cfg, nil
}

// watchStatus prints a line per change of the rollout of config name until
// it ends, and returns the config as it ended. It reads the config, then
// watches it from that read's resourceVersion; when the watch closes (the
// API server ends every watch after a while) or its resourceVersion is too
// old (410 Gone), it reads again and watches from there: a change made in
// between is in the new read, so none is missed, and an unchanged line is
// not printed twice.
func watchStatus(ctx context.Context, c ctrlclient.WithWatch, name string, out io.Writer) (*v1alpha1.SandboxConfig, error) {
	last := ""
	show := func(cfg *v1alpha1.SandboxConfig) bool {
		if l := line(cfg); l != last {
			last = l
			fmt.Fprintf(out, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), l)
		}
		_, done := outcome(cfg)
		return done
	}
	for {
		cfg, err := getConfig(ctx, c, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if show(cfg) {
			return cfg, nil
		}
		end, err := watchFrom(ctx, c, name, cfg.ResourceVersion, show)
		if err != nil || end != nil {
			return end, err
		}
		// The watch closed or expired: read again.
	}
}

// watchFrom watches config name from resourceVersion rv and hands each new
// state to show until show says the rollout ended (that state is returned),
// the watch closes or expires (nil, nil), or ctx ends.
func watchFrom(ctx context.Context, c ctrlclient.WithWatch, name, rv string, show func(*v1alpha1.SandboxConfig) bool) (*v1alpha1.SandboxConfig, error) {
	w, err := c.Watch(ctx, &v1alpha1.SandboxConfigList{}, &ctrlclient.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
		Raw:           &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true},
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("watching SandboxConfig %q: %w", name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				cfg, ok := ev.Object.(*v1alpha1.SandboxConfig)
				if !ok {
					return nil, fmt.Errorf("watching SandboxConfig %q: got a %T", name, ev.Object)
				}
				if show(cfg) {
					return cfg, nil
				}
			case watch.Deleted:
				return nil, fmt.Errorf("SandboxConfig %q was deleted", name)
			case watch.Error:
				// 410 Gone: rv is older than the API server keeps; start
				// over from a new read.
				if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					return nil, fmt.Errorf("watching SandboxConfig %q: %w", name, err)
				}
				return nil, nil
			}
		}
	}
}
