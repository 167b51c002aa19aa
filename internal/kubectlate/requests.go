package kubectlate

import "ate.dev/orchestrator/api/v1alpha1"

// requestKind is one of the requests an operator makes to a rollout: an
// annotation of the config, each new value of which the rollout acts on
// once and records in status.rollout (recorded).
type requestKind struct {
	// verb is the command (`kubectl ate rollout VERB NAME`); promote
	// --full is "promote --full".
	verb       string
	annotation string
	recorded   func(*v1alpha1.RolloutStatus) string
	// does says what the rollout does with it, for the command's help
	// and its output.
	does string
}

var (
	pauseRequest = requestKind{verb: "pause", annotation: v1alpha1.RolloutPauseAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.PauseRequest },
		does:     "holds the rollout where it is until a resume"}
	resumeRequest = requestKind{verb: "resume", annotation: v1alpha1.RolloutResumeAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.ResumeRequest },
		does:     "lets a paused or halted rollout go on"}
	retryRequest = requestKind{verb: "retry", annotation: v1alpha1.RolloutRetryAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.RetryRequest },
		does:     "takes a halted or aborted rollout from its current step again"}
	promoteRequest = requestKind{verb: "promote", annotation: v1alpha1.RolloutPromoteAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.PromoteRequest },
		does:     "ends the current step's approval wait and bake"}
	promoteFullRequest = requestKind{verb: "promote --full", annotation: v1alpha1.RolloutPromoteFullAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.PromoteFullRequest },
		does:     "skips every remaining step, approval and bake: every unpinned pool of the class is admitted at once"}
	abortRequest = requestKind{verb: "abort", annotation: v1alpha1.RolloutAbortAnnotation,
		recorded: func(s *v1alpha1.RolloutStatus) string { return s.AbortRequest },
		does:     "moves every pool the rollout admitted back to the config it came from, and holds it Aborted until a retry"}
)

// requestKinds are every request, in the order status lists pending ones.
var requestKinds = []requestKind{pauseRequest, resumeRequest, retryRequest, promoteRequest, promoteFullRequest, abortRequest}

// pending are the requests set on c that its rollout has not acted on yet
// (a value that status.rollout does not record).
func pending(c *v1alpha1.SandboxConfig) []requestKind {
	var out []requestKind
	for _, k := range requestKinds {
		v := c.Annotations[k.annotation]
		if v == "" {
			continue
		}
		if c.Status.Rollout == nil || k.recorded(c.Status.Rollout) != v {
			out = append(out, k)
		}
	}
	return out
}
