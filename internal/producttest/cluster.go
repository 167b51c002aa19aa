package producttest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
)

// DefaultBound is how long Eventually waits: far longer than any step of
// the product takes on a loaded machine, short enough that a stuck test
// says so well before the suite's timeout.
const DefaultBound = 60 * time.Second

// Eventually polls cond until it holds or DefaultBound passes.
func Eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	EventuallyWithin(t, DefaultBound, what, cond)
}

// EventuallyWithin polls cond until it holds or bound passes, and fails the
// test with the last state cond described.
func EventuallyWithin(t testing.TB, bound time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", bound, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CleanCluster deletes every WorkerPool and SandboxConfig, stripping the
// protection finalizer by hand, so the next test starts from an empty
// cluster: configs are cluster-scoped, and a class default left by one test
// would move the pools of the next.
func CleanCluster(t testing.TB, c client.Client) {
	t.Helper()
	ctx := context.Background()
	var pools v1alpha1.WorkerPoolList
	require.NoError(t, c.List(ctx, &pools))
	for i := range pools.Items {
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, &pools.Items[i])))
	}
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, c.List(ctx, &configs))
	for i := range configs.Items {
		cfg := &configs.Items[i]
		// The product may still be writing the config (a rollout's status):
		// a conflict reads it again.
		require.NoError(t, client.IgnoreNotFound(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cfg), cfg); err != nil {
				return err
			}
			if !controllerutil.RemoveFinalizer(cfg, v1alpha1.ProtectionFinalizer) {
				return nil
			}
			return c.Update(ctx, cfg)
		})))
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, cfg)))
	}
	Eventually(t, "the cluster to be empty", func() (bool, string) {
		var pools v1alpha1.WorkerPoolList
		var configs v1alpha1.SandboxConfigList
		if err := c.List(ctx, &pools); err != nil {
			return false, err.Error()
		}
		if err := c.List(ctx, &configs); err != nil {
			return false, err.Error()
		}
		for i := range configs.Items { // a worker still running may have protected one again
			cfg := &configs.Items[i]
			if controllerutil.RemoveFinalizer(cfg, v1alpha1.ProtectionFinalizer) {
				_ = c.Update(ctx, cfg)
			}
		}
		return len(pools.Items) == 0 && len(configs.Items) == 0, fmt.Sprintf("%d pools, %d configs", len(pools.Items), len(configs.Items))
	})
}

// CreateAfterOthers creates a config whose creation timestamp is a whole
// second after every existing config's: creation timestamps have one-second
// resolution, and the newest class default must not fall back to the name
// tie-break.
func CreateAfterOthers(t testing.TB, kube client.Client, c *v1alpha1.SandboxConfig) {
	t.Helper()
	ctx := context.Background()
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, kube.List(ctx, &configs))
	var newest time.Time
	for _, existing := range configs.Items {
		if ts := existing.CreationTimestamp.Time; ts.After(newest) {
			newest = ts
		}
	}
	for !time.Now().Truncate(time.Second).After(newest) {
		time.Sleep(20 * time.Millisecond) // a clock boundary, not synchronisation
	}
	require.NoError(t, kube.Create(ctx, c))
}

// PoolEvents returns the events about a WorkerPool as "Type Reason: note",
// oldest first.
func PoolEvents(t testing.TB, cs kubernetes.Interface, ns, name string) []string {
	t.Helper()
	return events(t, cs, ns, "WorkerPool", name, "")
}

// events returns the events in ns about the object of kind named name (and
// of uid, unless it is empty) as "Type Reason: note", oldest first.
func events(t testing.TB, cs kubernetes.Interface, ns, kind, name string, uid types.UID) []string {
	t.Helper()
	list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var evs []eventsv1.Event
	for _, ev := range list.Items {
		if r := ev.Regarding; r.Kind == kind && r.Name == name && (uid == "" || r.UID == uid) {
			evs = append(evs, ev)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
	notes := make([]string, len(evs))
	for i, ev := range evs {
		notes[i] = ev.Type + " " + ev.Reason + ": " + ev.Note
	}
	return notes
}
