package kubectlate

import (
	"fmt"
	"io"
	"strings"
	"time"

	"ate.dev/orchestrator/api/v1alpha1"
)

// What the plugin says of a config with no status.rollout.
const (
	phaseNone       = "NoRollout"
	phasePending    = "Pending"
	phaseNotDefault = "NotDefault"
)

// phaseOf is the rollout phase of c as the plugin reports it: the status's,
// or, when the rollout has written none, why (no spec.rollout; not a class
// default, so no rollout runs; a rollout that has not written yet).
func phaseOf(c *v1alpha1.SandboxConfig) string {
	switch {
	case c.Status.Rollout != nil && c.Status.Rollout.Phase != "":
		return string(c.Status.Rollout.Phase)
	case c.Spec.Rollout == nil:
		return phaseNone
	case !c.IsClassDefault():
		return phaseNotDefault
	default:
		return phasePending
	}
}

// outcome is what `rollout status` exits with for c, and whether -w stops
// watching: the phases that need nobody's action to move on keep it
// watching; Paused and AwaitingApproval too, as a person's request moves
// them on.
func outcome(c *v1alpha1.SandboxConfig) (code int, done bool) {
	switch phaseOf(c) {
	case string(v1alpha1.RolloutCompleted), phaseNone:
		return ExitOK, true
	case string(v1alpha1.RolloutHalted), string(v1alpha1.RolloutStopped),
		string(v1alpha1.RolloutAborted), string(v1alpha1.RolloutRolledBack), string(v1alpha1.RolloutSuperseded):
		return ExitFailed, true
	}
	return ExitOK, false
}

// stepOf is "N of M" (M the steps of spec.rollout), or "N" without it.
func stepOf(c *v1alpha1.SandboxConfig) string {
	var step int32
	if c.Status.Rollout != nil {
		step = c.Status.Rollout.Step
	}
	if c.Spec.Rollout == nil {
		return fmt.Sprint(step)
	}
	return fmt.Sprintf("%d of %d", step, len(c.Spec.Rollout.Steps))
}

// messageOf is status.rollout.message, or what the plugin knows instead.
func messageOf(c *v1alpha1.SandboxConfig) string {
	if st := c.Status.Rollout; st != nil && st.Message != "" {
		return st.Message
	}
	switch phaseOf(c) {
	case phaseNone:
		return "no spec.rollout: every unpinned pool of the class moves at once when it is the class default"
	case phaseNotDefault:
		return fmt.Sprintf("no rollout runs: the config is not annotated %s: \"true\"", v1alpha1.ClassDefaultAnnotation)
	case phasePending:
		return "the rollout has not written its status yet"
	}
	return ""
}

// next is the command that moves a rollout on, or "" when none does.
func next(c *v1alpha1.SandboxConfig) string {
	switch v1alpha1.RolloutPhase(phaseOf(c)) {
	case v1alpha1.RolloutAwaitingApproval:
		return "kubectl ate rollout promote " + c.Name
	case v1alpha1.RolloutBaking:
		return "kubectl ate rollout promote " + c.Name + "   (ends the bake early)"
	case v1alpha1.RolloutPaused:
		if c.Spec.Rollout != nil && c.Spec.Rollout.Paused {
			// The spec's pause holds it: what lifts it is the spec, in Git
			// or by hand.
			return fmt.Sprintf(`kubectl patch sandboxconfig %s --type merge -p '{"spec":{"rollout":{"paused":false}}}'   (or set spec.rollout.paused to false where the config is kept)`, c.Name)
		}
		return "kubectl ate rollout resume " + c.Name
	case v1alpha1.RolloutHalted:
		return fmt.Sprintf("kubectl ate rollout retry %s   (or move the admitted pools back: kubectl ate rollout abort %s)", c.Name, c.Name)
	case v1alpha1.RolloutAborted, v1alpha1.RolloutRolledBack:
		return "kubectl ate rollout retry " + c.Name
	case v1alpha1.RolloutAwaitingClusters:
		// Nothing here moves it: the other clusters' rollouts do, or the
		// spec, where the config is kept.
		return fmt.Sprintf("nothing here: it goes on once the clusters above complete their rollouts of %s (or remove spec.rollout.after where the config is kept)", c.Name)
	}
	return ""
}

// printAwaited writes the clusters whose rollouts c's first step waits
// for (spec.rollout.after), a line each: cluster, its rollout's phase
// there, and why.
func printAwaited(w io.Writer, c *v1alpha1.SandboxConfig) {
	st := c.Status.Rollout
	if st == nil || st.Phase != v1alpha1.RolloutAwaitingClusters || len(st.AwaitingClusters) == 0 {
		return
	}
	width := len("CLUSTER")
	for _, a := range st.AwaitingClusters {
		width = max(width, len(a.Cluster))
	}
	fmt.Fprintf(w, "  waits for: %d of the %d clusters of spec.rollout.after\n", len(st.AwaitingClusters), afterClusters(c))
	fmt.Fprintf(w, "    %-*s  %-16s  %s\n", width, "CLUSTER", "PHASE THERE", "WHY")
	for _, a := range st.AwaitingClusters {
		phase := a.Phase
		if phase == "" {
			phase = "-"
		}
		fmt.Fprintf(w, "    %-*s  %-16s  %s\n", width, a.Cluster, phase, a.Message)
	}
}

// afterClusters is how many clusters spec.rollout.after lists.
func afterClusters(c *v1alpha1.SandboxConfig) int {
	if c.Spec.Rollout == nil || c.Spec.Rollout.After == nil {
		return 0
	}
	return len(c.Spec.Rollout.After.Clusters)
}

// line is the one-line state `rollout status -w` prints per change.
func line(c *v1alpha1.SandboxConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: step %s", phaseOf(c), stepOf(c))
	if st := c.Status.Rollout; st != nil {
		fmt.Fprintf(&b, ", %d moved, %d admitted of %d pools", st.MovedPools, st.AdmittedPools, st.TotalPools)
	}
	if m := messageOf(c); m != "" {
		b.WriteString(": " + m)
	}
	for _, k := range pending(c) {
		fmt.Fprintf(&b, " [%s requested]", k.verb)
	}
	return b.String()
}

// printStatus writes the state of c's rollout for a person.
func printStatus(w io.Writer, c *v1alpha1.SandboxConfig) {
	fmt.Fprintf(w, "SandboxConfig %s (%s): rollout %s\n", c.Name, c.Class(), phaseOf(c))
	fmt.Fprintf(w, "  step:      %s\n", stepOf(c))
	if st := c.Status.Rollout; st != nil {
		fmt.Fprintf(w, "  pools:     %d moved, %d admitted, %d total (unpinned pools of the class)\n", st.MovedPools, st.AdmittedPools, st.TotalPools)
	}
	if m := messageOf(c); m != "" {
		fmt.Fprintf(w, "  message:   %s\n", m)
	}
	printAnalysis(w, c)
	printAwaited(w, c)
	if st := c.Status.Rollout; st != nil && st.WorkflowID != "" {
		fmt.Fprintf(w, "  workflow:  %s\n", st.WorkflowID)
	}
	if c.Status.ObservedGeneration != 0 && c.Status.ObservedGeneration < c.Generation {
		fmt.Fprintf(w, "  note:      the status describes generation %d; the spec is at %d and the rollout has not taken it in yet\n",
			c.Status.ObservedGeneration, c.Generation)
	}
	for _, k := range pending(c) {
		fmt.Fprintf(w, "  requested: %s (%s=%s), not acted on yet\n", k.verb, k.annotation, c.Annotations[k.annotation])
	}
	if n := next(c); n != "" {
		fmt.Fprintf(w, "  next:      %s\n", n)
	}
}

// printAnalysis writes the last measurement of each metric of the step's
// analysis: its judgement, value, failures so far and why.
func printAnalysis(w io.Writer, c *v1alpha1.SandboxConfig) {
	st := c.Status.Rollout
	if st == nil {
		return
	}
	for _, m := range st.Analysis {
		fmt.Fprintf(w, "  analysis:  %s: %s", m.Metric, m.Phase)
		if m.Value != "" {
			fmt.Fprintf(w, " %s", m.Value)
		}
		fmt.Fprintf(w, " (step %d, %d out of bounds, at %s)", m.Step, m.Failures, m.MeasuredAt.UTC().Format(time.RFC3339))
		if m.Message != "" && m.Phase != v1alpha1.MeasurementSuccessful {
			fmt.Fprintf(w, ": %s", m.Message)
		}
		fmt.Fprintln(w)
	}
}
