// Package kubectlate is the kubectl plugin `kubectl ate`: it drives and
// watches SandboxConfig rollouts and explains WorkerPools with nothing but
// Kubernetes RBAC (no Temporal access, no exec into a pod). A request to a
// rollout is one merge patch of the config's annotations, which the
// rollout workflow acts on once per new value; everything else reads.
package kubectlate

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"ate.dev/orchestrator/internal/version"
)

// Exit codes of the plugin, as `kubectl ate rollout status` documents them.
const (
	ExitOK = 0
	// ExitFailed: the rollout is Halted, Stopped, Aborted, RolledBack or Superseded,
	// or the command failed.
	ExitFailed = 1
	// ExitTimeout: --timeout passed before the rollout reached a phase
	// that ends the watch.
	ExitTimeout = 2
)

// exitError ends a command with code, after printing err (when non-nil).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// options are what every verb shares: the kubeconfig flags, exactly as
// kubectl's, and where to write.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
}

// NewCommand is the root command `kubectl ate`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-ate",
		Short: "Drive and watch SandboxConfig rollouts, and explain WorkerPools",
		Long: `kubectl ate drives and watches the staged rollouts of SandboxConfigs and explains
which SandboxConfig a WorkerPool runs and why. It needs only Kubernetes RBAC: get, list
and watch on sandboxconfigs and workerpools, and patch on sandboxconfigs for the rollout
requests (the ClusterRole ate-rollout-operator grants exactly that).`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ate"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what `kubectl ate version` does, as the other
	// binaries' --version.
	root.Version = version.Get()
	root.SetVersionTemplate(version.String("kubectl-ate") + "\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.flags.AddFlags(root.PersistentFlags())
	rollout := &cobra.Command{
		Use:   "rollout",
		Short: "Watch, drive and preview the staged rollout of a SandboxConfig",
	}
	rollout.AddCommand(newStatusCommand(o), newListCommand(o), newPreviewCommand(o))
	for _, r := range requests {
		rollout.AddCommand(newRequestCommand(o, r))
	}
	pool := &cobra.Command{
		Use:   "pool",
		Short: "Explain WorkerPools",
	}
	pool.AddCommand(newWhyCommand(o))
	root.AddCommand(rollout, pool, newVersionCommand(o))
	return root
}

// Run runs `kubectl ate args...` and returns its exit code: what main
// exits with, and what tests call in-process.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(genericiooptions.IOStreams{In: nil, Out: stdout, ErrOut: stderr})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "error:", err)
	return ExitFailed
}
