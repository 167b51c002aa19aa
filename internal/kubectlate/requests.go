package kubectlate

import (
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// requestKind is one of the requests an operator makes to a rollout: an
// annotation of the config, each new value of which the rollout acts on
// once and records in status.rollout (pendingIn picks its value from what
// rollout.PendingRequests, the rollout's own reading, finds unanswered).
type requestKind struct {
	// verb is the command (`kubectl ate rollout VERB NAME`); promote
	// --full is "promote --full".
	verb       string
	annotation string
	pendingIn  func(rollout.Requests) string
	// does says what the rollout does with it, for the command's help
	// and its output.
	does string
}

var (
	pauseRequest = requestKind{verb: "pause", annotation: v1alpha1.RolloutPauseAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.Pause },
		does:      "holds the rollout where it is until a resume"}
	resumeRequest = requestKind{verb: "resume", annotation: v1alpha1.RolloutResumeAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.Resume },
		does:      "lets a paused or halted rollout go on"}
	retryRequest = requestKind{verb: "retry", annotation: v1alpha1.RolloutRetryAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.Retry },
		does:      "takes a halted, aborted or rolled-back rollout from its current step again"}
	promoteRequest = requestKind{verb: "promote", annotation: v1alpha1.RolloutPromoteAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.Promote },
		does:      "ends the current step's approval wait and bake"}
	promoteFullRequest = requestKind{verb: "promote --full", annotation: v1alpha1.RolloutPromoteFullAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.PromoteFull },
		does:      "skips every remaining step, approval and bake: every unpinned pool of the class is admitted at once"}
	abortRequest = requestKind{verb: "abort", annotation: v1alpha1.RolloutAbortAnnotation,
		pendingIn: func(r rollout.Requests) string { return r.Abort },
		does:      "moves every pool the rollout admitted back to the config it came from, and holds it Aborted until a retry"}
)

// requestKinds are every request, in the order status lists pending ones.
var requestKinds = []requestKind{pauseRequest, resumeRequest, retryRequest, promoteRequest, promoteFullRequest, abortRequest}

// pending are the requests set on c that its rollout has not acted on yet
// (a value that status.rollout does not record).
func pending(c *v1alpha1.SandboxConfig) []requestKind {
	unanswered := rollout.PendingRequests(c)
	var out []requestKind
	for _, k := range requestKinds {
		if k.pendingIn(unanswered) != "" {
			out = append(out, k)
		}
	}
	return out
}
