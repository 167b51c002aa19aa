package starterapp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
)

func TestClaimsWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	at := func(rv string) *v1alpha1.WorkerPool {
		return &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	move := resolve.Move{Class: v1alpha1.SandboxClassGVisor, From: "a", To: "b"}
	claimed := move
	claimed.Pending = "b"
	now := time.Unix(1000, 0)
	c := newClaims()
	c.now = func() time.Time { return now }

	require.Zero(t, c.wait(key, at("1"), move), "a move nobody started starts now")
	c.started(key, at("1"))
	require.Equal(t, switchRunningRecheck, c.wait(key, at("1"), move), "not again from the state it was started from")
	require.Zero(t, c.wait(key, at("2"), move), "a newer state that still needs the move starts it (a running switch refuses)")

	require.Equal(t, staleClaimAfter, c.wait(key, at("3"), claimed), "the claim of the move: its switch is under way")
	now = now.Add(staleClaimAfter / 2)
	require.Equal(t, staleClaimAfter/2, c.wait(key, at("3"), claimed))
	now = now.Add(staleClaimAfter / 2)
	require.Zero(t, c.wait(key, at("3"), claimed), "a claim held this long is most likely stale: start a switch")

	c.forget(key)
	require.Zero(t, c.wait(key, at("1"), move), "forgotten once the pool needed nothing")
}
