package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"ate.dev/orchestrator/api/v1alpha1"
)

// The rule of spec.rollout.after (docs/decisions/0027-waves-across-clusters.md):
// a rollout's first step begins only once the config of the same name has
// completed its rollout in each cluster listed, on the same Temporal
// namespace, and after.bake has passed since the last of them completed.
// Only the first step waits: a rollout that admitted it goes on whatever
// the other clusters do since, so a wave once begun is never held by a
// later change elsewhere (a halt there, a new rollout there).

// The states of a cluster's rollout workflow (ClusterRollout.Workflow): its
// latest run, as Temporal describes it. A run that closed another way
// (Terminated, Failed, Canceled, TimedOut) is named by Temporal's word.
const (
	// WorkflowNone: the cluster has no rollout workflow of the config.
	WorkflowNone = ""
	// WorkflowRunning: its latest run is open.
	WorkflowRunning = "Running"
	// WorkflowCompleted: its latest run returned a result (Phase).
	WorkflowCompleted = "Completed"
	// WorkflowForeign: a workflow of another type holds the ID (one
	// started by hand): no rollout; Message says what it is.
	WorkflowForeign = "Foreign"
)

// ClusterRollout is the rollout of the config of the same name in another
// cluster, as the latest run of its workflow (<cluster>/sandboxconfig/<name>/rollout)
// shows it: the latest run decides, whatever the runs before it did (a
// rollout that continued as new, or started over for a config created
// again, is its newest run). LookAtRollout reads it through Temporal.
type ClusterRollout struct {
	Cluster string `json:"cluster"`
	// Workflow is how its latest run stands (WorkflowNone, WorkflowRunning,
	// WorkflowCompleted, or how it closed without a result).
	Workflow string `json:"workflow,omitempty"`
	// Phase, Step and Message: a running one's as its plan query answered
	// (Phase "" when it did not: Message says why); a completed one's
	// result (Step 0).
	Phase   v1alpha1.RolloutPhase `json:"phase,omitempty"`
	Step    int32                 `json:"step,omitempty"`
	Message string                `json:"message,omitempty"`
	// ClosedAt is when its latest run closed (zero while it runs): for a
	// result of Completed, when the rollout completed.
	ClosedAt time.Time `json:"closedAt,omitzero"`
}

// Completed reports whether the cluster's rollout completed: its latest run
// ended with the phase Completed.
func (r ClusterRollout) Completed() bool {
	return r.Workflow == WorkflowCompleted && r.Phase == v1alpha1.RolloutCompleted
}

// AwaitsClusters reports whether a look of c's rollout must read the
// clusters of spec.rollout.after: it lists some, and the first step has
// not been admitted (status.rollout.step is 0, as before a first step, and
// after a stop, which drops it; done, the steps the asking run has done,
// is 0 or -1 on a first look). A rollout without after, or past its first
// step, never reads another cluster.
func AwaitsClusters(c *v1alpha1.SandboxConfig, done int32) bool {
	if c == nil || c.Spec.Rollout == nil || c.Spec.Rollout.After == nil || len(c.Spec.Rollout.After.Clusters) == 0 {
		return false
	}
	return done <= 0 && (c.Status.Rollout == nil || c.Status.Rollout.Step == 0)
}

// maxAwaitedMessage and maxAwaitedPhase bound a
// status.rollout.awaitingClusters[] entry's message and phase: what another
// cluster's workflow says is not trusted to fit.
const (
	maxAwaitedMessage = 512
	maxAwaitedPhase   = 64
)

// awaitClusters holds v, a verdict to take a step, on AwaitingClusters
// while the first step waits for spec.rollout.after: ok is false when it
// does not (no after, the first step admitted, every cluster completed and
// baked).
func awaitClusters(f Facts, v Verdict) (Verdict, bool) {
	c := f.Config
	if v.Action != Take || !AwaitsClusters(c, v.Done) {
		return v, false
	}
	after := c.Spec.Rollout.After
	held := v
	held.Action, held.Phase, held.Step = Hold, v1alpha1.RolloutAwaitingClusters, 0
	for _, name := range after.Clusters {
		if name == f.Cluster {
			held.Awaiting = []v1alpha1.RolloutAwaitedCluster{{Cluster: name, Message: fmt.Sprintf(
				"this cluster itself: a rollout cannot wait for its own; remove %q from spec.rollout.after.clusters", name)}}
			held.Message = fmt.Sprintf("refused: spec.rollout.after.clusters lists this cluster, %q, itself: a rollout cannot wait for its own; remove it from the list", name)
			return held, true
		}
	}
	read := map[string]ClusterRollout{}
	for _, r := range f.After {
		read[r.Cluster] = r
	}
	var bake time.Duration
	if after.Bake != nil {
		bake = after.Bake.Duration
	}
	var last time.Time // the last completion of the clusters that completed
	for _, name := range after.Clusters {
		r, ok := read[name]
		if !ok {
			held.Awaiting = append(held.Awaiting, v1alpha1.RolloutAwaitedCluster{Cluster: name,
				Message: fmt.Sprintf("the rollout of SandboxConfig %q in cluster %q has not been read yet", c.Name, name)})
			continue
		}
		if r.Completed() {
			if r.ClosedAt.After(last) {
				last = r.ClosedAt
			}
			continue
		}
		held.Awaiting = append(held.Awaiting, v1alpha1.RolloutAwaitedCluster{Cluster: name, Phase: truncateTo(string(r.Phase), maxAwaitedPhase),
			Message: truncateTo(notDone(c.Name, r), maxAwaitedMessage)})
	}
	if len(held.Awaiting) == 0 {
		ready := last.Add(bake)
		if bake <= 0 || !f.Now.Before(ready) {
			return v, false
		}
		held.ReadyAt = &ready
		held.Message = fmt.Sprintf("waiting before step 1: the rollout of SandboxConfig %q completed in every cluster of spec.rollout.after, the last at %s; spec.rollout.after.bake (%s) lasts until %s",
			c.Name, stamp(last), bake, stamp(ready))
		for _, name := range after.Clusters {
			if r := read[name]; r.ClosedAt.Add(bake).After(f.Now) {
				held.Awaiting = append(held.Awaiting, v1alpha1.RolloutAwaitedCluster{Cluster: name, Phase: string(v1alpha1.RolloutCompleted),
					Message: fmt.Sprintf("the rollout of SandboxConfig %q in cluster %q completed at %s; spec.rollout.after.bake (%s) lasts until %s",
						c.Name, name, stamp(r.ClosedAt), bake, stamp(r.ClosedAt.Add(bake)))})
			}
		}
		return held, true
	}
	whys := make([]string, len(held.Awaiting))
	for i, a := range held.Awaiting {
		whys[i] = a.Message
	}
	held.Message = fmt.Sprintf("waiting before step 1 for the rollout of SandboxConfig %q to complete in %d of the %d clusters of spec.rollout.after: %s",
		c.Name, len(held.Awaiting), len(after.Clusters), strings.Join(whys, "; "))
	return held, true
}

// notDone says why a cluster's rollout, read, is not done.
func notDone(config string, r ClusterRollout) string {
	of := fmt.Sprintf("the rollout of SandboxConfig %q in cluster %q", config, r.Cluster)
	withWhy := func(s, why string) string {
		if why != "" {
			return s + ": " + why
		}
		return s
	}
	at := ""
	if r.Step > 0 {
		at = fmt.Sprintf(" at step %d", r.Step)
	}
	switch {
	case r.Workflow == WorkflowNone:
		return fmt.Sprintf("no rollout of SandboxConfig %q in cluster %q yet", config, r.Cluster)
	case r.Workflow == WorkflowRunning && r.Phase == "":
		return withWhy(of+" is running; where it stands is not known", r.Message)
	case r.Workflow == WorkflowRunning && r.Phase == v1alpha1.RolloutCompleted:
		return of + " is completing"
	case r.Workflow == WorkflowRunning:
		return withWhy(fmt.Sprintf("%s is %s%s", of, r.Phase, at), r.Message)
	case r.Workflow == WorkflowForeign:
		return withWhy(fmt.Sprintf("no rollout of SandboxConfig %q in cluster %q", config, r.Cluster), r.Message)
	case r.Workflow == WorkflowCompleted:
		return withWhy(fmt.Sprintf("%s ended %s at %s, without completing", of, r.Phase, stamp(r.ClosedAt)), r.Message)
	}
	return fmt.Sprintf("%s: its workflow's latest run ended %s at %s, without completing", of, r.Workflow, stamp(r.ClosedAt))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// truncateTo cuts s to n bytes on a rune boundary.
func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AwaitWritten reports whether st, the status a look read, already says
// what v, a hold on AwaitingClusters, would write: the workflow then writes
// nothing, so a wait of hours costs a status write per change only.
func AwaitWritten(st v1alpha1.RolloutStatus, v Verdict) bool {
	return st.Phase == v.Phase && st.Message == truncateMessage(v.Message) &&
		slices.Equal(st.AwaitingClusters, v.Awaiting)
}
