package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestDrivingARollout (issue 46) drives a rollout by its request
// annotations alone, as `kubectl ate rollout ...` and a Git commit do: a
// step waiting for approval goes on at a promote, which also skips its
// bake; an abort sends every admitted pool back to the old default and
// holds, its counts following them back; a retry takes the step again; a pause and a resume are heard
// during a bake; a promote --full admits every pool at once, skipping the
// remaining bake. Each change is an event on the config, once.
func TestDrivingARollout(t *testing.T) {
	p := producttest.Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	rolloutFleet(t, p, ns, 6, 0)

	approval := producttest.Step(1, false, time.Hour)
	approval.Approval = true
	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, nil, approval, producttest.Step(50, true, time.Hour), producttest.Step(100, true, 0)))
	st := p.WaitForRollout(t, "new", "step 1 awaits approval", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutAwaitingApproval
	})
	require.Contains(t, st.Message, "`kubectl ate rollout promote new`", "the status names the command that goes on")
	require.Equal(t, keys(ns, "p00"), producttest.OnConfig(t, kube, ns, "new"), "the canary moved")

	producttest.Request(t, kube, "new", v1alpha1.RolloutPromoteAnnotation, "2026-12-07T10:00:00.000000000Z")
	p.WaitForRollout(t, "new", "step 2 baking: the promote skipped step 1's bake too", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking
	})
	require.Len(t, producttest.OnConfig(t, kube, ns, "new"), 3, "50% of 6")

	producttest.Request(t, kube, "new", v1alpha1.RolloutAbortAnnotation, "2026-12-07T10:01:00.000000000Z")
	st = p.WaitForRollout(t, "new", "aborted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutAborted })
	require.Equal(t, int32(2), st.Abort.Step)
	producttest.Eventually(t, "every admitted pool back on old", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "old")
		return len(on) == 6, fmt.Sprint(on)
	})
	// Its counts follow the pools back while it holds (nothing else
	// writes its status then).
	p.WaitForRollout(t, "new", "the counts of the aborted rollout: nothing admitted, nothing on it", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutAborted && s.AdmittedPools == 0 && s.MovedPools == 0 && s.TotalPools == 6
	})
	producttest.RequireStays(t, 2*time.Second, "an aborted rollout moves nothing", func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return len(on) == 0, fmt.Sprint(on)
	})

	producttest.Request(t, kube, "new", v1alpha1.RolloutRetryAnnotation, "2026-12-07T10:02:00.000000000Z")
	p.WaitForRollout(t, "new", "step 2 taken again and baking", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 2 && s.Phase == v1alpha1.RolloutBaking && s.Abort == nil
	})
	require.Len(t, producttest.OnConfig(t, kube, ns, "new"), 3, "the retried step admitted its pools again")

	producttest.Request(t, kube, "new", v1alpha1.RolloutPauseAnnotation, "2026-12-07T10:03:00.000000000Z")
	p.WaitForRollout(t, "new", "the pause recorded", func(s *v1alpha1.RolloutStatus) bool { return s.SignalPaused })
	producttest.Request(t, kube, "new", v1alpha1.RolloutResumeAnnotation, "2026-12-07T10:04:00.000000000Z")
	p.WaitForRollout(t, "new", "the resume recorded", func(s *v1alpha1.RolloutStatus) bool {
		return !s.SignalPaused && s.ResumeRequest == "2026-12-07T10:04:00.000000000Z"
	})

	producttest.Request(t, kube, "new", v1alpha1.RolloutPromoteFullAnnotation, "2026-12-07T10:05:00.000000000Z")
	st = p.WaitForRollout(t, "new", "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.Equal(t, []int32{6, 6, 6}, []int32{st.AdmittedPools, st.MovedPools, st.TotalPools})

	want := []string{
		"Normal RolloutPromoted", "Normal RolloutStepCompleted", "Warning RolloutAborted", "Normal RolloutResumed",
		"Normal RolloutPaused", "Normal RolloutResumed", "Normal RolloutPromoted", "Normal RolloutStepCompleted", "Normal RolloutCompleted",
	}
	var got []string
	producttest.Eventually(t, "one event for each change, in order", func() (bool, string) {
		got = got[:0]
		for _, e := range p.ConfigEvents(t, "new") {
			got = append(got, e[:strings.Index(e, ":")])
		}
		return slices.Equal(got, want), strings.Join(p.ConfigEvents(t, "new"), "\n")
	})
}
