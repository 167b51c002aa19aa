package rollout

import "ate.dev/orchestrator/api/v1alpha1"

// Requests are the values of a config's request annotations that the
// rollout has not acted on yet ("" for none): each annotation's new value
// is a request made once, whether by `kubectl ate rollout ...`, by a Git
// commit or by hand, and status.rollout records the last value answered,
// so that neither a crash nor a quick second request loses or repeats one.
type Requests struct {
	Pause       string `json:"pause,omitempty"`
	Resume      string `json:"resume,omitempty"`
	Promote     string `json:"promote,omitempty"`
	PromoteFull string `json:"promoteFull,omitempty"`
	Abort       string `json:"abort,omitempty"`
	Retry       string `json:"retry,omitempty"`
}

// PendingRequests reads the requests of c its rollout has not answered.
func PendingRequests(c *v1alpha1.SandboxConfig) Requests {
	st := v1alpha1.RolloutStatus{}
	if c.Status.Rollout != nil {
		st = *c.Status.Rollout
	}
	pending := func(annotation, answered string) string {
		if v := c.Annotations[annotation]; v != answered {
			return v
		}
		return ""
	}
	return Requests{
		Pause:       pending(v1alpha1.RolloutPauseAnnotation, st.PauseRequest),
		Resume:      pending(v1alpha1.RolloutResumeAnnotation, st.ResumeRequest),
		Promote:     pending(v1alpha1.RolloutPromoteAnnotation, st.PromoteRequest),
		PromoteFull: pending(v1alpha1.RolloutPromoteFullAnnotation, st.PromoteFullRequest),
		Abort:       pending(v1alpha1.RolloutAbortAnnotation, st.AbortRequest),
		Retry:       pending(v1alpha1.RolloutRetryAnnotation, st.RetryRequest),
	}
}

// Any reports whether a request is pending.
func (r Requests) Any() bool { return r != Requests{} }

// wins says whether request a, made with b also pending, takes effect: the
// greater value wins (the plugin writes UTC timestamps, which sort in time
// order), a tie going to a.
func wins(a, b string) bool { return a != "" && (b == "" || a >= b) }
