package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// counts are status.rollout's counts as the API server has them.
type counts struct{ admitted, moved, total int32 }

func (w *rolloutWorld) counts() counts {
	w.t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(w.t, w.env.Kube.Get(context.Background(), ctrlclient.ObjectKey{Name: w.config.Name}, &c))
	if c.Status.Rollout == nil {
		return counts{-1, -1, -1}
	}
	return counts{c.Status.Rollout.AdmittedPools, c.Status.Rollout.MovedPools, c.Status.Rollout.TotalPools}
}

// TestAHeldRolloutsCountsFollowItsPools: while a rollout is held (here
// aborted), KeepRolloutCounts keeps its counts current as the pools go back,
// and as pools are created in the class; when the rollout rewrites its
// status under it (a retry lifting the abort), it counts against the new
// admission, not the one it read first; a hold where nothing moves costs
// the API server nothing; a cancel ends it. On a real API server and the
// worker's informer cache, woken by the pools' events (its poll is an
// hour).
func TestAHeldRolloutsCountsFollowItsPools(t *testing.T) {
	w, informer, n, a := wokenWorld(t)
	ctx := context.Background()
	adm := admitStep(t, a, w, 1)
	require.Equal(t, []string{w.key("a"), w.key("b")}, adm.Pools, "the first two pools in name order")
	for _, name := range []string{"a", "b"} {
		w.setPool(name, w.config.Name, true)
		w.seen(informer, name)
	}
	abort := &v1alpha1.RolloutHalt{Step: 1, Message: "aborted by the test"}
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: w.config.Name, UID: w.config.UID,
		Phase: v1alpha1.RolloutAborted, Message: "aborted", Abort: abort}))
	require.Equal(t, counts{admitted: 0, moved: 2, total: 3}, w.counts(), "the abort's write: nothing admitted, two pools still on it")

	kctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		why, err := a.KeepRolloutCounts(kctx, KeepCountsInput{Config: w.config.Name, UID: w.config.UID})
		if err == nil {
			err = errors.New("returned " + why)
		}
		done <- err
	}()

	eventually := func(want counts, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return w.counts() == want }, 10*time.Second, 20*time.Millisecond,
			"%s: want %+v, status says %+v", what, want, w.counts())
	}
	w.setPool("a", w.old, true)
	eventually(counts{admitted: 0, moved: 1, total: 3}, "a went back")
	w.setPool("b", w.old, true)
	eventually(counts{admitted: 0, moved: 0, total: 3}, "b went back: the last")
	w.pool("d")
	eventually(counts{admitted: 0, moved: 0, total: 4}, "a pool created in the class")

	// Quiet: nothing moves, nothing is asked.
	_, _, gets0, _ := n.snapshot()
	quiet := time.Now()
	for time.Since(quiet) < 3*time.Second {
		select {
		case err := <-done:
			t.Fatalf("KeepRolloutCounts returned while the rollout held: %v", err)
		case <-time.After(100 * time.Millisecond): // a window to count requests in, not synchronisation
		}
	}
	lists, _, gets, _ := n.snapshot()
	require.Equal(t, gets0, gets, "no GET of the config while nothing moves")
	require.Zero(t, lists, "no LIST ever")

	// The rollout rewrites its status under it: a retry lifts the abort,
	// and the step's pools are admitted again. What it counts next is
	// against that admission.
	require.NoError(t, a.SetRolloutStatus(ctx, RolloutStatusInput{Config: w.config.Name, UID: w.config.UID,
		Phase: v1alpha1.RolloutProgressing, Message: "retrying step 1", ClearAbort: true}))
	require.Equal(t, counts{admitted: 2, moved: 0, total: 4}, w.counts(), "the retry's write")
	w.setPool("a", w.config.Name, true)
	eventually(counts{admitted: 2, moved: 1, total: 4}, "a moved again, counted against the lifted abort")

	// Cancelled as the SDK cancels an activity the workflow cancelled:
	// its expected end, no error (which the SDK would log as one).
	cancel(temporal.NewCanceledError())
	select {
	case err := <-done:
		require.EqualError(t, err, "returned "+CountsCancelled)
	case <-time.After(10 * time.Second): // a bound, not synchronisation
		t.Fatal("KeepRolloutCounts did not end on its cancel")
	}
}
