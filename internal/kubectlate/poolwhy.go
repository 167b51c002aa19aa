package kubectlate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

func newWhyCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "why [NAMESPACE/]NAME",
		Short: "Explain which SandboxConfig a WorkerPool runs, and what it waits for",
		Long: `For each sandbox class of the WorkerPool: the SandboxConfig it is on and the one it
resolves to, and why (the product's own resolution, run here on the cluster's
SandboxConfigs); what it waits for (a step of a rollout, a switch that is due or blocked,
a config that is missing); its Resolved condition; and the last switch that moved it,
with its Temporal workflow and run IDs. NAME alone is looked up in the namespace of
-n or the kubeconfig's context.`,
		Example: `  kubectl ate pool why ate-demo/counter
  kubectl ate pool why -n ate-demo counter`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok {
				name = ns
				var err error
				if ns, _, err = o.flags.ToRawKubeConfigLoader().Namespace(); err != nil {
					return fmt.Errorf("reading the kubeconfig's namespace: %w", err)
				}
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			return why(cmd.Context(), c, ns, name, o.streams.Out, time.Now())
		},
	}
}

func why(ctx context.Context, c ctrlclient.Reader, ns, name string, w io.Writer, now time.Time) error {
	var wp v1alpha1.WorkerPool
	if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &wp); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("WorkerPool %s/%s not found", ns, name)
		}
		return fmt.Errorf("reading WorkerPool %s/%s: %w", ns, name, err)
	}
	var list v1alpha1.SandboxConfigList
	if err := (pagedReader{Reader: c, size: pageSize}).List(ctx, &list); err != nil {
		return fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	byName := map[string]*v1alpha1.SandboxConfig{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	configs := resolve.ConfigsFrom(list.Items)
	fmt.Fprintf(w, "WorkerPool %s/%s", ns, name)
	if cond := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved); cond != nil {
		fmt.Fprintf(w, ": %s %s", cond.Type, conditionText(cond, now))
	}
	fmt.Fprintln(w)
	if wp.DeletionTimestamp != nil {
		fmt.Fprintln(w, "  being deleted")
	}
	for _, entry := range wp.Spec.SandboxClasses {
		explainClass(w, &wp, entry, configs, byName, now)
	}
	return nil
}

// explainClass writes what one class of wp runs, resolves to, and waits for.
func explainClass(w io.Writer, wp *v1alpha1.WorkerPool, entry v1alpha1.WorkerPoolSandboxClass, configs []resolve.Config,
	byName map[string]*v1alpha1.SandboxConfig, now time.Time) {
	st := wp.Status.ClassStatus(entry.Name)
	if st == nil {
		st = &v1alpha1.WorkerPoolSandboxClassStatus{Name: entry.Name}
	}
	current := st.ConfigRef.NameOf()
	if entry.ConfigRef != nil {
		fmt.Fprintf(w, "class %s: pinned to SandboxConfig %s (spec configRef)\n", entry.Name, entry.ConfigRef.Name)
	} else {
		fmt.Fprintf(w, "class %s: follows the class default (no configRef)\n", entry.Name)
	}
	fmt.Fprintf(w, "  on:           %s\n", orDash(current))
	if st.PendingConfigRef != nil {
		fmt.Fprintf(w, "  claimed:      %s (pendingConfigRef: a switch claimed it and has not confirmed it)\n", st.PendingConfigRef.Name)
	}
	// The product's own resolution, on the configs as listed now.
	res := resolve.Class(rollout.KeyOf(wp), entry, current, configs)
	verdict := "Resolved"
	if !res.Resolved {
		verdict = "not resolved"
	}
	fmt.Fprintf(w, "  resolves to:  %s (%s, %s: %s)\n", orDash(res.Target), verdict, res.Reason, res.Message)
	for _, wait := range waitsFor(entry, st, res, configs, byName) {
		fmt.Fprintf(w, "  waits for:    %s\n", wait)
	}
	if cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved); cond != nil {
		fmt.Fprintf(w, "  Resolved:     %s\n", conditionText(cond, now))
	} else {
		fmt.Fprintln(w, "  Resolved:     no condition yet (the worker has not resolved the class)")
	}
	if ls := st.LastSwitch; ls != nil {
		fmt.Fprintf(w, "  last switch:  workflow %s, run %s\n", ls.WorkflowID, ls.RunID)
		fmt.Fprintf(w, "  its history:  temporal workflow show --workflow-id '%s' --run-id %s\n", ls.WorkflowID, ls.RunID)
	} else {
		fmt.Fprintln(w, "  last switch:  none: no switch has moved the class")
	}
}

// waitsFor says what keeps the class from being settled on the config it
// resolves to; "nothing" when it is.
func waitsFor(entry v1alpha1.WorkerPoolSandboxClass, st *v1alpha1.WorkerPoolSandboxClassStatus, res resolve.Result,
	configs []resolve.Config, byName map[string]*v1alpha1.SandboxConfig) []string {
	var out []string
	current := st.ConfigRef.NameOf()
	if !res.Resolved {
		out = append(out, fmt.Sprintf("a SandboxConfig it can use (%s): %s", res.Reason, res.Message))
	}
	if entry.ConfigRef == nil {
		if d := resolve.NewestDefault(entry.Name, configs); d != "" && res.Target != d {
			if c := byName[d]; c != nil {
				out = append(out, fmt.Sprintf("the rollout of SandboxConfig %s to admit it (%s, step %s): kubectl ate rollout status %s",
					d, phaseOf(c), stepOf(c), d))
			}
		}
	}
	if cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing); cond != nil && cond.Status == metav1.ConditionTrue {
		target := st.PendingConfigRef.NameOf()
		if target == "" {
			target = res.Target
		}
		out = append(out, fmt.Sprintf("a blocked switch to %s: step %s keeps failing (SwitchStepFailing): %s", orDash(target), cond.Reason, cond.Message))
	} else if st.PendingConfigRef != nil && st.PendingConfigRef.Name != current {
		out = append(out, fmt.Sprintf("the switch that claimed %s to confirm it", st.PendingConfigRef.Name))
	}
	if res.Target != "" && res.Target != current && st.PendingConfigRef == nil {
		out = append(out, fmt.Sprintf("the switch that moves it from %s to %s (the worker starts it)", orDash(current), res.Target))
	}
	if len(out) == 0 {
		out = append(out, "nothing: it is on the SandboxConfig it resolves to")
	}
	return out
}

// conditionText is "Status (Reason): message, since T (AGE ago)".
func conditionText(c *metav1.Condition, now time.Time) string {
	s := fmt.Sprintf("%s (%s): %s", c.Status, c.Reason, c.Message)
	if !c.LastTransitionTime.IsZero() {
		s += fmt.Sprintf(", since %s (%s ago)", c.LastTransitionTime.UTC().Format(time.RFC3339),
			duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
