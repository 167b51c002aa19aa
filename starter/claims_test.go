package starter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

func TestClaimsWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	move := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "b"}
	claimed := move
	claimed.Pending = "b"
	now := time.Unix(1000, 0)
	c := newClaims()
	c.now = func() time.Time { return now }

	require.Zero(t, c.wait(key, move), "a move nobody started starts now")
	require.Equal(t, startedRecheck, c.started(key, move), "a started move is looked at again")
	require.Equal(t, startedRecheck, c.wait(key, move), "not again at once")

	require.Equal(t, staleClaimAfter, c.wait(key, claimed), "the claim of the move: its switch is under way")
	now = now.Add(staleClaimAfter / 2)
	require.Equal(t, staleClaimAfter/2, c.wait(key, claimed))
	now = now.Add(staleClaimAfter / 2)
	require.Zero(t, c.wait(key, claimed), "a claim held this long is most likely stale: start a switch")

	c.forget(key)
	require.Zero(t, c.wait(key, move), "forgotten once the pool needed nothing")
}

// TestClaimsDeferAStartedMoveForABoundedTime: a switch that ends or is
// terminated before its claim writes nothing the starter watches; the
// memo of its start defers the move, and then lets it start again (before,
// it deferred for as long as the pool's resourceVersion stayed the same).
func TestClaimsDeferAStartedMoveForABoundedTime(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	move := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "b"}
	now := time.Unix(1000, 0)
	c := newClaims()
	c.now = func() time.Time { return now }

	c.started(key, move)
	now = now.Add(startedRecheck - time.Millisecond)
	require.Equal(t, time.Millisecond, c.wait(key, move))
	now = now.Add(time.Millisecond)
	require.Zero(t, c.wait(key, move), "the deferral ran out: start again (a running switch refuses)")
	now = now.Add(10 * time.Minute)
	require.Zero(t, c.wait(key, move), "and it stays out")

	other := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "c"}
	c.started(key, move)
	require.Zero(t, c.wait(key, other), "another move is not deferred by this one's start")
}

// TestClaimsBackOffRefusedStarts: a start refused because the pool's switch
// runs is tried again after a backoff doubling from 1 s to its cap, per
// pool, started over by a start that succeeds or a pool that needs
// nothing; the running switch is asked to re-plan once per distinct move it
// does not work on.
func TestClaimsBackOffRefusedStarts(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	otherPool := types.NamespacedName{Namespace: "ns", Name: "q"}
	toB := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "b"}
	toC := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "c"}
	now := time.Unix(1000, 0)
	c := newClaims()
	c.now = func() time.Time { return now }

	c.started(key, toB)
	now = now.Add(startedRecheck)
	var waits []time.Duration
	for range 8 {
		require.Zero(t, c.wait(key, toB), "due")
		again, ask := c.refused(key, toB)
		require.False(t, ask, "the running switch works on this move: no signal")
		require.Equal(t, again, c.wait(key, toB), "deferred until the backoff runs out")
		waits = append(waits, again)
		now = now.Add(again)
	}
	s := time.Second
	require.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}, waits)

	again, ask := c.refused(otherPool, toB)
	require.Equal(t, firstSwitchRunningBackoff, again, "each pool backs off on its own")
	require.True(t, ask, "no memory of what runs for that pool (e.g. after a restart): signal")
	c.signalled(otherPool, toB)
	_, ask = c.refused(otherPool, toB)
	require.False(t, ask, "signalled once, not on every retry")

	require.Zero(t, c.wait(key, toC), "a re-pin is tried at once, whatever the backoff of the old move")
	again, ask = c.refused(key, toC)
	require.Equal(t, firstSwitchRunningBackoff, again, "another move starts its own backoff")
	require.True(t, ask, "the running switch works on another move: ask it to re-plan")
	c.signalled(key, toC)
	_, ask = c.refused(key, toC)
	require.False(t, ask)
	_, ask = c.refused(key, toB)
	require.True(t, ask, "back to the first move: the switch was asked to plan the other one")

	c.started(key, toB)
	now = now.Add(startedRecheck)
	again, _ = c.refused(key, toB)
	require.Equal(t, firstSwitchRunningBackoff, again, "a start that succeeded starts the backoff over")
	c.forget(key)
	again, ask = c.refused(key, toB)
	require.Equal(t, firstSwitchRunningBackoff, again, "so does a pool that needed nothing")
	require.True(t, ask)
}

// TestClaimsLearnTheRunningSwitchsMove: a starter that knows nothing of a
// pool's running switch (after its own restart) looks it up before asking
// it to re-plan; once it knows the switch makes the move, a refused start
// asks nothing, and another move asks once.
func TestClaimsLearnTheRunningSwitchsMove(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	move := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "b"}
	c := newClaims()

	require.False(t, c.knowsRunning(key), "a fresh starter knows nothing of the running switch")
	_, ask := c.refused(key, move)
	require.True(t, ask, "unknown: the caller looks the switch up")
	c.running(key, keyOfRun(wfapi.SwitchInput{Class: move.Class, From: "a", To: "b"}))
	require.True(t, c.knowsRunning(key))
	_, ask = c.refused(key, move)
	require.False(t, ask, "the running switch makes this very move")

	other := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "c"}
	_, ask = c.refused(key, other)
	require.True(t, ask, "another move: ask the switch to re-plan")
	c.signalled(key, other)
	_, ask = c.refused(key, other)
	require.False(t, ask, "once per distinct move")

	abandon := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", Abandon: "b"}
	c.running(key, keyOfRun(wfapi.SwitchInput{Class: move.Class, From: "a", To: "b"}))
	_, ask = c.refused(key, abandon)
	require.True(t, ask, "clearing a claim is not the move that made it")
}
