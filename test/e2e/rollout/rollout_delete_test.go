package rollout

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/resolve"
)

// TestDeletingTheOldDefaultDuringARolloutKeepsItsPools: the pools are on
// the class default "old"; "new", a newer default, rolls out in stages
// ({pools: 1, pause: 1h}, {percent: 100}); an older default "oldest" is
// annotated too, so a move backwards would show. Once the canary moved and
// step 1 bakes, "old" is deleted: only the canary is on "new", every other
// pool stays on "old" (Resolved, waiting for the rollout, the deletion
// said), none goes to "oldest", "old" stays Terminating, and its
// SandboxConfigDeleting Warning names the rollout it waits for. Removing
// spec.rollout from "new" ends the rollout: every pool moves to "new" and
// "old" is released and gone.
func TestDeletingTheOldDefaultDuringARolloutKeepsItsPools(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("oldest", true)))
	// "old" is created after "oldest" (or in the same second, where its
	// name sorts first): the pools go to "old".
	names := rolloutFleet(t, p, ns, 5, 2)
	canary := keys(ns, names[2])
	var others []string
	for i, n := range names {
		if i != 2 {
			others = append(others, ns+"/"+n)
		}
	}
	slices.Sort(others)
	everyone := keys(ns, names...)

	p.CreateAfterOthers(t, producttest.RolloutConfig("new", false, nil,
		producttest.Step(1, false, time.Hour), producttest.Step(100, true, 0)))
	p.WaitForRollout(t, "new", "baking step 1", func(s *v1alpha1.RolloutStatus) bool {
		return s.Step == 1 && s.Phase == v1alpha1.RolloutBaking
	})
	require.Equal(t, canary, producttest.OnConfig(t, kube, ns, "new"), "step 1 moved the canary only")

	require.NoError(t, kube.Delete(ctx, producttest.GVisorConfig("old", true)))
	var old v1alpha1.SandboxConfig
	producttest.Eventually(t, `SandboxConfig "old" marked for deletion`, func() (bool, string) {
		if err := kube.Get(ctx, client.ObjectKey{Name: "old"}, &old); err != nil {
			return false, err.Error()
		}
		return old.DeletionTimestamp != nil, fmt.Sprintf("deletionTimestamp %v", old.DeletionTimestamp)
	})
	// Every pool the rollout has not admitted says why it stays.
	want := resolve.WaitingDeletingMessage("old", "new")
	for _, name := range names {
		if ns+"/"+name == canary[0] {
			continue
		}
		producttest.Eventually(t, fmt.Sprintf("WorkerPool %s/%s waiting on %q in deletion", ns, name, "old"), func() (bool, string) {
			var wp v1alpha1.WorkerPool
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp); err != nil {
				return false, err.Error()
			}
			st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
			if st == nil || len(st.Conditions) == 0 {
				return false, "no status yet"
			}
			c := producttest.ResolvedCondition(&wp)
			return st.ConfigRef.NameOf() == "old" && c.Status == metav1.ConditionTrue && c.Message == want,
				fmt.Sprintf("on %q, Resolved %s: %s", st.ConfigRef.NameOf(), c.Status, c.Message)
		})
	}
	producttest.RequireStays(t, 3*time.Second, "the pools the rollout has not admitted stay on the deleted default", func() (bool, string) {
		onNew := producttest.OnConfig(t, kube, ns, "new")
		onOld := producttest.OnConfig(t, kube, ns, "old")
		onOldest := producttest.OnConfig(t, kube, ns, "oldest")
		var c v1alpha1.SandboxConfig
		err := kube.Get(ctx, client.ObjectKey{Name: "old"}, &c)
		state := fmt.Sprintf("on new %v, on old %v, on oldest %v, old: %v", onNew, onOld, onOldest, err)
		return slices.Equal(onNew, canary) && slices.Equal(onOld, others) && len(onOldest) == 0 &&
			err == nil && c.DeletionTimestamp != nil, state
	})
	note := fmt.Sprintf(`Warning SandboxConfigDeleting: SandboxConfig "old" is being deleted; %d pools wait for the rollout of SandboxConfig "new" (step 1)`, len(others))
	producttest.Eventually(t, `the Warning of "old" naming the rollout it waits for`, func() (bool, string) {
		evs := p.ConfigEvents(t, "old")
		return slices.Contains(evs, note), fmt.Sprintf("%q", evs)
	})

	// Ending the rollout lets every pool follow the default: "old" goes.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"rollout":null}}`))
	require.NoError(t, kube.Patch(ctx, &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, patch))
	producttest.Eventually(t, `every pool on "new"`, func() (bool, string) {
		on := producttest.OnConfig(t, kube, ns, "new")
		return slices.Equal(on, everyone), fmt.Sprint(on)
	})
	p.WaitGone(t, &old)
	require.Empty(t, producttest.OnConfig(t, kube, ns, "oldest"), "no pool went back to the older default")
}
