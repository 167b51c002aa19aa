package kubectlate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kubectlate"
)

// TestRequests: each request verb is one merge patch that sets its
// annotation to a UTC time of fixed width, a second request a greater
// one, and changes nothing else of the config.
func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		annotation string
	}{
		{[]string{"pause"}, v1alpha1.RolloutPauseAnnotation},
		{[]string{"resume"}, v1alpha1.RolloutResumeAnnotation},
		{[]string{"retry"}, v1alpha1.RolloutRetryAnnotation},
		{[]string{"promote"}, v1alpha1.RolloutPromoteAnnotation},
		{[]string{"promote", "--full"}, v1alpha1.RolloutPromoteFullAnnotation},
		{[]string{"abort"}, v1alpha1.RolloutAbortAnnotation},
	} {
		t.Run(tc.args[len(tc.args)-1], func(t *testing.T) {
			c := newConfig(t, true, step(1), step(2))
			// An annotation of someone else's, which the patch keeps.
			c.Annotations["example.com/owner"] = "platform"
			require.NoError(t, kube().Update(t.Context(), c))
			before := get(t, c.Name)

			start := time.Now().UTC()
			res := run(t, append(append([]string{"rollout"}, tc.args...), c.Name)...)
			require.Equal(t, 0, res.code, res.stderr)
			after := get(t, c.Name)
			first := after.Annotations[tc.annotation]
			at, err := time.Parse(kubectlate.RequestTimeFormat, first)
			require.NoError(t, err, "the value %q is a UTC time of fixed width", first)
			require.Len(t, first, len(kubectlate.RequestTimeFormat))
			require.False(t, at.Before(start.Truncate(time.Nanosecond)), "%s is before the request at %s", at, start)
			require.Contains(t, res.stdout, tc.annotation+"="+first)
			require.Contains(t, res.stdout, "kubectl ate rollout status "+c.Name+" -w")

			// Only that annotation changed: the spec (and so the
			// generation), the labels, the other annotations are as they
			// were, and so is every other request's annotation.
			require.Equal(t, before.Generation, after.Generation)
			require.Equal(t, before.Spec, after.Spec)
			require.Equal(t, before.Labels, after.Labels)
			delete(after.Annotations, tc.annotation)
			require.Equal(t, before.Annotations, after.Annotations)

			res = run(t, append(append([]string{"rollout"}, tc.args...), c.Name)...)
			require.Equal(t, 0, res.code, res.stderr)
			second := get(t, c.Name).Annotations[tc.annotation]
			require.Greater(t, second, first, "a second request sets a greater value")
		})
	}
}

// TestRequestValuesSortInRequestOrder: a resume made after a pause has the
// greater value, also when the pause's value is ahead of this machine's
// clock (set by another machine, or by hand): the rollout takes the
// greater of a new pause and a new resume.
func TestRequestValuesSortInRequestOrder(t *testing.T) {
	c := newConfig(t, true, step(1))
	ahead := time.Now().UTC().Add(time.Hour).Format(kubectlate.RequestTimeFormat)
	c.Annotations[v1alpha1.RolloutPauseAnnotation] = ahead
	require.NoError(t, kube().Update(t.Context(), c))

	res := run(t, "rollout", "resume", c.Name)
	require.Equal(t, 0, res.code, res.stderr)
	resume := get(t, c.Name).Annotations[v1alpha1.RolloutResumeAnnotation]
	require.Greater(t, resume, ahead)

	res = run(t, "rollout", "pause", c.Name)
	require.Equal(t, 0, res.code, res.stderr)
	require.Greater(t, get(t, c.Name).Annotations[v1alpha1.RolloutPauseAnnotation], resume)
}

// TestRequestRefuses: no patch for a config that does not exist or has no
// staged rollout, and an error that says which.
func TestRequestRefuses(t *testing.T) {
	plain := newConfig(t, true)
	for _, tc := range []struct {
		name, config, want string
	}{
		{"missing config", "no-such-config", `SandboxConfig "no-such-config" not found`},
		{"no spec.rollout", plain.Name, "has no spec.rollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, verb := range []string{"pause", "resume", "retry", "promote", "abort"} {
				res := run(t, "rollout", verb, tc.config)
				require.Equal(t, 1, res.code, verb)
				require.Contains(t, res.stderr, tc.want, verb)
				require.Empty(t, res.stdout, verb)
			}
		})
	}
	require.Equal(t, plain.Annotations, get(t, plain.Name).Annotations, "a refused request patches nothing")
	requireGone(t, "no-such-config")
}
