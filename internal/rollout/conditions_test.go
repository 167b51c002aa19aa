package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// rollingConfig is a class default of generation 5 with a three-step
// rollout and, when phase is not "-", a rollout status at step 2 that has
// taken in generation 4.
func rollingConfig(phase v1alpha1.RolloutPhase, message string) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "v2", Generation: 5,
			Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
		Spec: v1alpha1.SandboxConfigSpec{SandboxClass: v1alpha1.SandboxClassGVisor, Rollout: &v1alpha1.SandboxConfigRollout{
			Steps: []v1alpha1.RolloutStep{{Pools: new(int32(1))}, {Percent: new(int32(50))}, {Percent: new(int32(100))}},
		}},
	}
	if phase != "-" {
		c.Status.Rollout = &v1alpha1.RolloutStatus{Phase: phase, Step: 2, Message: message, ObservedGeneration: 4}
	}
	return c
}

func TestConditions(t *testing.T) {
	type want struct {
		ready, progressing, stalled bool
		reason, message             string
		generation                  int64
	}
	tests := []struct {
		name   string
		config func() *v1alpha1.SandboxConfig
		newest string
		want   want
	}{
		{
			name: "a plain config never rolled out: Ready, NoRollout",
			config: func() *v1alpha1.SandboxConfig {
				c := rollingConfig("-", "")
				c.Annotations, c.Spec.Rollout = nil, nil
				return c
			},
			newest: "v1",
			want:   want{ready: true, reason: v1alpha1.ReasonNoRollout, message: "no staged rollout of this config is live", generation: 5},
		},
		{
			name:   "a superseded default that never wrote a rollout status: NoRollout, saying why",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig("-", "") },
			newest: "v3",
			want: want{ready: true, reason: v1alpha1.ReasonNoRollout, generation: 5,
				message: `no staged rollout of this config is live: superseded by SandboxConfig "v3", a newer default of sandbox class "gvisor"`},
		},
		{
			name:   "live, not started: RolloutPending, progressing",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig("-", "") },
			newest: "v2",
			want:   want{progressing: true, reason: v1alpha1.ReasonRolloutPending, message: "the rollout has not started yet", generation: 5},
		},
		{
			name:   "live, a status with no phase yet (a request recorded): pending",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig("", "") },
			newest: "v2",
			want:   want{progressing: true, reason: v1alpha1.ReasonRolloutPending, message: "the rollout has not started yet", generation: 5},
		},
		{
			name:   "Progressing: progressing, at the generation the rollout has taken in",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutProgressing, "moving 2 pools") },
			newest: "v2",
			want:   want{progressing: true, reason: "RolloutProgressing", message: "step 2 of 3: moving 2 pools", generation: 4},
		},
		{
			name:   "Baking: progressing",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutBaking, "baking for 10m") },
			newest: "v2",
			want:   want{progressing: true, reason: "RolloutBaking", message: "step 2 of 3: baking for 10m", generation: 4},
		},
		{
			name: "AwaitingClusters: progressing, the other clusters named",
			config: func() *v1alpha1.SandboxConfig {
				c := rollingConfig(v1alpha1.RolloutAwaitingClusters, `waiting before step 1 for the rollout of SandboxConfig "v2" to complete in 1 of the 1 clusters of spec.rollout.after: no rollout of SandboxConfig "v2" in cluster "staging" yet`)
				c.Status.Rollout.Step = 0
				return c
			},
			newest: "v2",
			want: want{progressing: true, reason: "RolloutAwaitingClusters", generation: 4,
				message: `waiting before step 1 for the rollout of SandboxConfig "v2" to complete in 1 of the 1 clusters of spec.rollout.after: no rollout of SandboxConfig "v2" in cluster "staging" yet`},
		},
		{
			name:   "Paused: neither progressing nor stalled",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutPaused, "paused") },
			newest: "v2",
			want:   want{reason: "RolloutPaused", message: "step 2 of 3: paused", generation: 4},
		},
		{
			name:   "AwaitingApproval: neither progressing nor stalled",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutAwaitingApproval, "") },
			newest: "v2",
			want:   want{reason: "RolloutAwaitingApproval", message: "step 2 of 3: rollout AwaitingApproval", generation: 4},
		},
		{
			name:   "Halted: Stalled",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutHalted, "gate failed") },
			newest: "v2",
			want:   want{stalled: true, reason: "RolloutHalted", message: "step 2 of 3: gate failed", generation: 4},
		},
		{
			name:   "Aborted: Stalled",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutAborted, "aborted by ops") },
			newest: "v2",
			want:   want{stalled: true, reason: "RolloutAborted", message: "step 2 of 3: aborted by ops", generation: 4},
		},
		{
			name: "a live rollout whose status has taken in no generation: the config's",
			config: func() *v1alpha1.SandboxConfig {
				c := rollingConfig(v1alpha1.RolloutProgressing, "moving")
				c.Status.Rollout.ObservedGeneration, c.Status.Rollout.Step = 0, 0
				return c
			},
			newest: "v2",
			want:   want{progressing: true, reason: "RolloutProgressing", message: "moving", generation: 5},
		},
		{
			name:   "Completed: Ready, whatever the newest default",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutCompleted, "all 3 steps done") },
			newest: "v3",
			want:   want{ready: true, reason: "RolloutCompleted", message: "all 3 steps done", generation: 5},
		},
		{
			name:   "Superseded by a newer default mid-rollout: Ready (the newer one's rollout is what moves)",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutProgressing, "moving") },
			newest: "v3",
			want: want{ready: true, reason: "RolloutSuperseded", generation: 5,
				message: `superseded by SandboxConfig "v3", a newer default of sandbox class "gvisor"`},
		},
		{
			name: "Stopped: the annotation removed mid-rollout",
			config: func() *v1alpha1.SandboxConfig {
				c := rollingConfig(v1alpha1.RolloutHalted, "gate failed")
				c.Annotations = nil
				return c
			},
			newest: "",
			want: want{ready: true, reason: "RolloutStopped", generation: 5,
				message: `SandboxConfig "v2" is no longer annotated sandboxconfig.ate.dev/is-class-default: "true"; its pools follow the class default again`},
		},
		{
			name: "Stopped: spec.rollout removed",
			config: func() *v1alpha1.SandboxConfig {
				c := rollingConfig(v1alpha1.RolloutPaused, "paused")
				c.Spec.Rollout = nil
				return c
			},
			newest: "v2",
			want: want{ready: true, reason: "RolloutStopped", generation: 5,
				message: "spec.rollout was removed: every unpinned pool of the class follows the config at once"},
		},
		{
			name:   "a Stopped status of an earlier run, live again: pending",
			config: func() *v1alpha1.SandboxConfig { return rollingConfig(v1alpha1.RolloutStopped, "annotation removed") },
			newest: "v2",
			want: want{progressing: true, reason: v1alpha1.ReasonRolloutPending, generation: 5,
				message: "the rollout has not started again yet (it was Stopped: annotation removed)"},
		},
	}
	now := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(tt.config(), tt.newest, now)
			require.Equal(t, tt.want.generation, got.ObservedGeneration)
			status := func(b bool) metav1.ConditionStatus {
				if b {
					return metav1.ConditionTrue
				}
				return metav1.ConditionFalse
			}
			var wantConds []metav1.Condition
			for _, c := range []struct {
				typ string
				set bool
			}{{"Ready", tt.want.ready}, {"Progressing", tt.want.progressing}, {"Stalled", tt.want.stalled}} {
				wantConds = append(wantConds, metav1.Condition{Type: c.typ, Status: status(c.set), Reason: tt.want.reason,
					Message: tt.want.message, ObservedGeneration: tt.want.generation, LastTransitionTime: now})
			}
			require.Equal(t, wantConds, got.Conditions)
		})
	}
}

func TestConditionsKeepTheTransitionTimeOfAStatusThatStays(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	c := rollingConfig(v1alpha1.RolloutProgressing, "moving")
	c.Status.Conditions = append(Conditions(c, "v2", t0).Conditions,
		metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Someone", LastTransitionTime: t0})
	before := slices.Clone(c.Status.Conditions)

	// Baking: still not Ready, still Progressing, still not Stalled.
	c.Status.Rollout.Phase = v1alpha1.RolloutBaking
	got := Conditions(c, "v2", t1).Conditions
	require.Equal(t, before, c.Status.Conditions, "the config's own conditions are not written to")
	for _, typ := range []string{"Ready", "Progressing", "Stalled"} {
		cond := meta.FindStatusCondition(got, typ)
		require.Equal(t, t0, cond.LastTransitionTime, typ)
		require.Equal(t, "RolloutBaking", cond.Reason, typ)
	}
	require.NotNil(t, meta.FindStatusCondition(got, "Other"), "a condition of another type is kept")

	// Halted: Progressing and Stalled change, Ready stays False.
	c.Status.Conditions, c.Status.Rollout.Phase = got, v1alpha1.RolloutHalted
	got = Conditions(c, "v2", t1).Conditions
	require.Equal(t, t0, meta.FindStatusCondition(got, "Ready").LastTransitionTime)
	require.Equal(t, t1, meta.FindStatusCondition(got, "Progressing").LastTransitionTime)
	require.Equal(t, t1, meta.FindStatusCondition(got, "Stalled").LastTransitionTime)

	// A look that changes nothing returns the conditions as they are, so the
	// keeper writes nothing.
	c.Status.Conditions = got
	require.Equal(t, got, Conditions(c, "v2", metav1.NewTime(t1.Add(time.Hour))).Conditions)
}

func TestConditionsTruncateALongMessageOnARuneBoundary(t *testing.T) {
	c := rollingConfig(v1alpha1.RolloutHalted, strings.Repeat("é", 1000))
	for _, cond := range Conditions(c, "v2", metav1.Now()).Conditions {
		require.LessOrEqual(t, len(cond.Message), MaxConditionMessage)
		require.Greater(t, len(cond.Message), MaxConditionMessage-2)
		require.True(t, strings.HasPrefix(cond.Message, "step 2 of 3: éé"))
		require.True(t, strings.HasSuffix(cond.Message, "é"), "cut between runes")
	}
}
