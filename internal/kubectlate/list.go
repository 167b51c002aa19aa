package kubectlate

import (
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"ate.dev/orchestrator/api/v1alpha1"
)

// listMessageWidth bounds the MESSAGE column: `rollout status NAME` has
// the whole message.
const listMessageWidth = 80

func newListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every SandboxConfig with a staged rollout, and where it stands",
		Long: `List every SandboxConfig with a staged rollout (spec.rollout, or a status.rollout a
rollout wrote), sorted by class and name: its class, phase, step, the unpinned pools
of the class on it out of all of them, its age and its message (shortened; rollout
status NAME prints it whole).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var list v1alpha1.SandboxConfigList
			if err := (pagedReader{Reader: c, size: pageSize}).List(cmd.Context(), &list); err != nil {
				return fmt.Errorf("listing SandboxConfigs: %w", err)
			}
			var rows []*v1alpha1.SandboxConfig
			for i := range list.Items {
				if c := &list.Items[i]; c.Spec.Rollout != nil || c.Status.Rollout != nil {
					rows = append(rows, c)
				}
			}
			sort.Slice(rows, func(i, j int) bool {
				if rows[i].Class() != rows[j].Class() {
					return rows[i].Class() < rows[j].Class()
				}
				return rows[i].Name < rows[j].Name
			})
			if len(rows) == 0 {
				fmt.Fprintln(o.streams.ErrOut, "No SandboxConfig has a rollout.")
				return nil
			}
			tw := tabwriter.NewWriter(o.streams.Out, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCLASS\tPHASE\tSTEP\tMOVED/TOTAL\tAGE\tMESSAGE")
			for _, c := range rows {
				moved := "-"
				if st := c.Status.Rollout; st != nil {
					moved = fmt.Sprintf("%d/%d", st.MovedPools, st.TotalPools)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Class(), phaseOf(c), stepColumn(c), moved,
					duration.HumanDuration(time.Since(c.CreationTimestamp.Time)), shorten(messageOf(c), listMessageWidth))
			}
			return tw.Flush()
		},
	}
}

// stepColumn is "N/M", or "N" without spec.rollout.
func stepColumn(c *v1alpha1.SandboxConfig) string {
	var step int32
	if c.Status.Rollout != nil {
		step = c.Status.Rollout.Step
	}
	if c.Spec.Rollout == nil {
		return fmt.Sprint(step)
	}
	return fmt.Sprintf("%d/%d", step, len(c.Spec.Rollout.Steps))
}

// shorten cuts s to n runes, with an ellipsis when it cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
