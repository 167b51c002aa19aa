package kubectlate

import (
	"fmt"

	"github.com/spf13/cobra"

	"ate.dev/orchestrator/internal/version"
)

func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(o.streams.Out, version.String("kubectl-ate"))
			return err
		},
	}
}
