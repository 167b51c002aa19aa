package install

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// TestUpgradeFromPreviousRelease installs the previous release of this
// repository (previousRelease: the newest release before HEAD, by its tag or its CHANGELOG.md heading; before the
// first release, the previous commit): its deploy/ rendered, its worker,
// starter and teardown built. It runs pools through a switch, and upgrades to the current tree as
// docs/install.md says: the CRDs first, server-side, then the rest; the
// processes restart on the new configuration and binaries. Every pool stays
// Resolved=True throughout (a watch sees every change of the pools), no
// SandboxConfigSwitched event is lost or recorded again by the new
// processes, no Warning is recorded, and a switch after the upgrade adds
// exactly one event per pool.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	prev := previousRelease(t)
	t.Logf("upgrading from %s", prev)
	oldObjs, newObjs := prev.manifests(t), manifests(t, "kustomize")
	requireNotInstalled(t)
	old := &binaries{}
	old.start(prev.dir)
	t.Cleanup(func() { <-old.done; _ = os.RemoveAll(old.dir) })
	newBins := current.wait(t)
	old.wait(t)

	install(t, oldObjs)
	orch := startOrchestrator(t, old, oldObjs)
	ns := poolNamespace(t)
	ps := newPools(t, ns, "upgrade", 3)
	ps.switchTo(t, "upgrade-second")
	before := ps.events(t)
	requireNoWarnings(t, before)

	w := watchResolved(t, ns, ps.names)
	k := newKube(t)
	crds, rest := installSplit(newObjs)
	k.apply(t, crds, false)
	k.apply(t, rest, false)
	waitRolledOut(t, newObjs)
	// The Deployments' rollout replaces the pods: the old processes stop,
	// the new ones start on the new configuration.
	orch.stop(t)
	orch = startOrchestrator(t, newBins, newObjs)

	ps.switchTo(t, "upgrade-third")
	ps.release(t)
	after := ps.events(t)
	requireNoWarnings(t, after)
	for _, pool := range ps.names {
		require.Len(t, after[pool], len(before[pool])+1, "pool %s's events: %q, before the upgrade %q", pool, after[pool], before[pool])
		require.Equal(t, before[pool], after[pool][:len(before[pool])], "pool %s's events before the upgrade, lost or changed", pool)
		require.True(t, switchedTo(after[pool][len(before[pool])], "upgrade-third"), "pool %s's last event %q", pool, after[pool][len(before[pool])])
	}
	w.requireResolvedThroughout(t)

	// An apply does not prune: what only the previous manifests had (a
	// ConfigMap of another content hash) is left to the uninstall, which
	// deletes both renders' objects.
	uninstall(t, orch, newBins, union(oldObjs, newObjs))
}

func requireNoWarnings(t testing.TB, events map[string][]string) {
	t.Helper()
	for pool, evs := range events {
		for _, ev := range evs {
			require.False(t, strings.HasPrefix(ev, corev1.EventTypeWarning+" "), "pool %s has a Warning event: %q", pool, evs)
		}
	}
}

// union is a then the objects of b that a lacks.
func union(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured(nil), a...)
	seen := map[string]bool{}
	for _, o := range a {
		seen[id(o)] = true
	}
	for _, o := range b {
		if !seen[id(o)] {
			out = append(out, o)
		}
	}
	return out
}

// resolvedWatch watches a namespace's pools and records every state in
// which one of them is not Resolved=True.
type resolvedWatch struct {
	mu         sync.Mutex
	seen       map[string]int // updates seen per pool
	violations []string
	err        error
	stop       context.CancelFunc
	done       chan struct{}
}

// watchResolved lists the pools (each must be Resolved=True) and watches
// them from that list's resourceVersion on.
func watchResolved(t testing.TB, ns string, names []string) *resolvedWatch {
	t.Helper()
	env := testenv.Current()
	c, err := client.NewWithWatch(env.RestConfig, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &resolvedWatch{seen: map[string]int{}, stop: cancel, done: make(chan struct{})}
	var list v1alpha1.WorkerPoolList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	require.Len(t, list.Items, len(names))
	for i := range list.Items {
		w.check(&list.Items[i])
	}
	require.Empty(t, w.violations, "before the upgrade")
	rv := list.ResourceVersion
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			wi, err := c.Watch(ctx, &v1alpha1.WorkerPoolList{}, client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("watching the pools: %w", err))
				}
				return
			}
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Error:
					if ctx.Err() == nil { // not the stop's own cancellation
						w.fail(fmt.Errorf("watching the pools: %v", ev.Object))
					}
					wi.Stop()
					return
				case watch.Bookmark:
				case watch.Deleted:
					wp := ev.Object.(*v1alpha1.WorkerPool)
					w.record(fmt.Sprintf("pool %s deleted", wp.Name))
				default:
					w.check(ev.Object.(*v1alpha1.WorkerPool))
				}
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			}
		}
	}()
	t.Cleanup(func() { w.stop(); <-w.done })
	return w
}

func (w *resolvedWatch) check(wp *v1alpha1.WorkerPool) {
	w.mu.Lock()
	w.seen[wp.Name]++
	w.mu.Unlock()
	st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	if st == nil {
		w.record(fmt.Sprintf("pool %s (resourceVersion %s) has no gvisor status", wp.Name, wp.ResourceVersion))
		return
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
	if c == nil || c.Status != metav1.ConditionTrue {
		w.record(fmt.Sprintf("pool %s (resourceVersion %s) Resolved=%+v", wp.Name, wp.ResourceVersion, c))
	}
}

func (w *resolvedWatch) record(v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, v)
}

func (w *resolvedWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// requireResolvedThroughout stops the watch and requires that it saw no
// pool leave Resolved=True, and saw the switch after the upgrade (so it
// was watching all along).
func (w *resolvedWatch) requireResolvedThroughout(t testing.TB) {
	t.Helper()
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NoError(t, w.err)
	require.Empty(t, w.violations)
	for pool, n := range w.seen {
		require.Greater(t, n, 1, "the watch saw no update of pool %s", pool)
	}
}
