package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestStagedConfig(t *testing.T) {
	c := stagedConfig("x", time.Minute)
	require.Equal(t, "true", c.Annotations[v1alpha1.ClassDefaultAnnotation])
	steps := c.Spec.Rollout.Steps
	require.Len(t, steps, 3)
	for i, p := range []int32{1, 10, 100} {
		require.Equal(t, p, *steps[i].Percent)
		require.Nil(t, steps[i].Pools)
	}
	require.Equal(t, time.Minute, steps[0].Pause.Duration)
	require.Nil(t, steps[1].Pause)
	require.Nil(t, stagedConfig("y", 0).Spec.Rollout.Steps[0].Pause)
	require.Equal(t, []int{1, 1, 10}, []int{wantAfter(1, 10), wantAfter(10, 10), wantAfter(100, 10)})
	require.Equal(t, []int{1, 10, 100, 10}, []int{wantAfter(1, 100), wantAfter(10, 100), wantAfter(100, 100), wantAfter(1, 1000)})
}

func TestRolloutMarkAdmits(t *testing.T) {
	m := rolloutMark{through: &v1alpha1.RolloutPoolRef{Namespace: "bench-1", Name: "pool-0011"}, canaries: []string{"bench-9/pool-0009"}}
	for pool, want := range map[string]bool{
		"bench-0/pool-0090": true, "bench-1/pool-0001": true, "bench-1/pool-0011": true,
		"bench-1/pool-0021": false, "bench-2/pool-0002": false, "bench-9/pool-0009": true,
	} {
		require.Equal(t, want, m.admits(pool), pool)
	}
	require.False(t, rolloutMark{}.admits("a/b"))
	require.True(t, rolloutMark{phase: v1alpha1.RolloutCompleted}.admits("a/b"))
	require.False(t, rolloutMark{through: &v1alpha1.RolloutPoolRef{Namespace: "z", Name: "z", Canary: true}}.admits("a/b"))
}

// rolloutOf10 is a rollout of 10 pools in steps 1%, 10%, 100% as the
// watch would see it: step 1 admits p0 at resourceVersion 50, which moves
// at 60; step 2 admits no more at 95; step 3 admits all at 105, and pool
// i of "ns/p<i>" moves at 110+10i; Completed at 300.
func rolloutOf10() rolloutView {
	through := func(name string) *v1alpha1.RolloutPoolRef {
		return &v1alpha1.RolloutPoolRef{Namespace: "ns", Name: name}
	}
	v := rolloutView{
		marks: []rolloutMark{
			{rv: 40, phase: v1alpha1.RolloutProgressing},
			{rv: 50, phase: v1alpha1.RolloutProgressing, step: 1, admitted: 1, through: through("p0")},
			{rv: 95, phase: v1alpha1.RolloutProgressing, step: 2, admitted: 1, through: through("p0")},
			{rv: 105, phase: v1alpha1.RolloutProgressing, step: 3, admitted: 10, through: through("p9")},
			{rv: 300, phase: v1alpha1.RolloutCompleted, step: 3, admitted: 10, through: through("p9")},
		},
		movedRV: map[string]uint64{}, moves: map[string]int{}, events: map[string]int{}, current: map[string]string{},
	}
	for i := range 10 {
		p := fmt.Sprintf("ns/p%d", i)
		v.movedRV[p], v.moves[p], v.events[p], v.current[p] = uint64(110+10*i), 1, 1, "new"
	}
	v.movedRV["ns/p0"] = 60
	return v
}

func TestCheckRollout(t *testing.T) {
	pct := []int32{1, 10, 100}
	require.Empty(t, checkRollout("new", 10, pct, rolloutOf10()))

	v := rolloutOf10()
	v.movedRV["ns/p1"] = 70 // before step 3 admitted it, and counted at step 1's and 2's end
	require.Equal(t, []string{
		"1 pools moved to new before a step admitted them: ns/p1 at resourceVersion 70, admitted at step 3 by the status write of 105",
		"step 1 (1%) ended with 2 of 10 pools on new, not 1",
		"step 2 (10%) ended with 2 of 10 pools on new, not 1",
	}, checkRollout("new", 10, pct, v))

	v = rolloutOf10()
	v.moves["ns/p3"], v.events["ns/p3"] = 2, 2
	v.marks = v.marks[:4] // never Completed
	require.Equal(t, []string{
		"10 of 10 pools have SandboxConfigSwitched events to new; not exactly one: ns/p3 has 2",
		"1 pools did not move to new exactly once: ns/p3 moved 2 times",
		"step 3 (100%) never ended",
		"status.rollout of new never showed phase Completed",
	}, checkRollout("new", 10, pct, v))

	v = rolloutOf10()
	v.current["ns/p9"] = "old"
	got := checkRollout("new", 10, pct, v)
	require.Len(t, got, 1)
	require.True(t, strings.HasPrefix(got[0], "9 of 10 pools on new"), got[0])
}

func TestStepsOf(t *testing.T) {
	v := rolloutOf10()
	start := time.Unix(1000, 0)
	for i := range v.marks {
		v.marks[i].at = start.Add(time.Duration(i) * time.Second)
	}
	require.Equal(t, []rolloutStepRun{
		{Step: 1, Percent: 1, Want: 1, AdmittedSeconds: 1, EndSeconds: 2, AdmittedPools: 1, MovedAtEnd: 1},
		{Step: 2, Percent: 10, Want: 1, AdmittedSeconds: 2, EndSeconds: 3, AdmittedPools: 1, MovedAtEnd: 1},
		{Step: 3, Percent: 100, Want: 10, AdmittedSeconds: 3, EndSeconds: 4, AdmittedPools: 10, MovedAtEnd: 10},
	}, stepsOf(v, []int32{1, 10, 100}, 10, start))
}

func TestJudgeRollout(t *testing.T) {
	names := []string{
		"staged rollouts correct: each pool moved once, after its step's admission; each step ends at its share",
		"staged rollout (1%, 10%, 100%, no bake) within 1.2x the unstaged wave",
		"no LIST of pools or of configs during a staged rollout",
		"at most 1 product API request per second during a rollout's bake",
	}
	v := judge(&result{Pools: 100})
	for _, name := range names {
		require.Equal(t, notJudged, v[name], "not measured: "+name)
	}
	v = judge(&result{Pools: 100, rolloutFigures: &rolloutFigures{RolloutRatioToWave: 1.2, RolloutBakeRequestsPerSecondTotal: 1}})
	for _, name := range names {
		require.Equal(t, met, v[name], name)
	}
	v = judge(&result{Pools: 100, rolloutFigures: &rolloutFigures{RolloutProblems: 1, RolloutRatioToWave: 1.21, RolloutConfigLists: 1,
		RolloutBakeRequestsPerSecondTotal: 1.01}})
	for _, name := range names {
		require.Equal(t, missed, v[name], name)
	}
}

// TestRolloutJSON: the figures are inlined in a result's JSON when
// measured (a measured 0 written), and absent with -rollout=false.
func TestRolloutJSON(t *testing.T) {
	b, err := json.Marshal(&result{Pools: 10})
	require.NoError(t, err)
	require.NotContains(t, string(b), "rollout")
	b, err = json.Marshal(&result{Pools: 10, rolloutFigures: &rolloutFigures{RolloutSeconds: 2.5}, Rollouts: []*rolloutRun{{Config: "c"}}})
	require.NoError(t, err)
	for _, field := range []string{`"rollout_seconds":2.5`, `"rollout_pool_lists":0`, `"rollout_config_lists":0`, `"rollout_ratio_to_wave":0`,
		`"rollout_bake_requests_per_second":null`, `"rollout_bake_api_cpu_percent":0`, `"rollout_history_events_per_step":0`,
		`"rollout_state_transitions_per_step":0`, `"rollouts":[{"config":"c"`} {
		require.Contains(t, string(b), field)
	}
}

// TestPrintTargetsUnmeasured: a run with -rollout=false shows the
// rollout targets with no value, not judged.
func TestPrintTargetsUnmeasured(t *testing.T) {
	var b strings.Builder
	printTargets(&b, []*result{{Pools: 10}}, nil)
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "no LIST of pools or of configs during a staged rollout") {
			line = l
		}
	}
	require.Regexp(t, `rollout +- not judged`, line)
}
