package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestTemplateEditRollsWithinBudget: a template edit rolls the pool's pods
// to a new ReplicaSet with no surge (the ReplicaSets never ask for more
// than the pool's replicas) and at most 10% unavailable (never fewer than
// 9 of 10 available), observed on every ReplicaSet write.
func TestTemplateEditRollsWithinBudget(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	gvisor := classNodes(t, p, v1alpha1.SandboxClassGVisor)
	const replicas = 10

	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-a", false)))
	require.NoError(t, p.Env.Kube.Create(ctx, gvisorPool(ns, "workers", "gvisor-a", replicas)))
	before := waitReadyOn(t, p, ns, "workers", replicas, gvisor)

	sel := labels.SelectorFromSet(map[string]string{v1alpha1.WorkerPoolLabel: "workers"}).String()
	rss, err := p.Clientset.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	require.NoError(t, err)
	require.Len(t, rss.Items, 1)
	w, err := p.Clientset.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rss.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	wp := getPool(t, p, ns, "workers")
	patch := client.MergeFrom(wp.DeepCopy())
	wp.Spec.Template.Labels = map[string]v1alpha1.LabelValue{"team": "infra"}
	require.NoError(t, p.Env.Kube.Patch(ctx, wp, patch))

	// Every ReplicaSet write, in order: the state after each is one the
	// cluster was in.
	state := map[string]appsv1.ReplicaSet{rss.Items[0].Name: rss.Items[0]}
	timeout := time.After(producttest.DefaultBound)
	writes := 0
	for {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-timeout:
			t.Fatalf("timed out after %s waiting for the rollout; ReplicaSets: %s", producttest.DefaultBound, describe(state))
		}
		rs, ok := ev.Object.(*appsv1.ReplicaSet)
		require.True(t, ok, "watch event %s: %v", ev.Type, ev.Object)
		writes++
		if ev.Type == watch.Deleted {
			delete(state, rs.Name)
		} else {
			state[rs.Name] = *rs
		}
		var asked, available int32
		for _, r := range state {
			asked += *r.Spec.Replicas
			available += r.Status.AvailableReplicas
		}
		require.LessOrEqual(t, asked, int32(replicas), "no surge: %s", describe(state))
		require.GreaterOrEqual(t, available, int32(replicas-replicas/10), "at most 10%% unavailable: %s", describe(state))
		if rolledOut(state, replicas) {
			break
		}
	}
	t.Logf("rolled out over %d ReplicaSet writes", writes)
	after := waitReadyOn(t, p, ns, "workers", replicas, gvisor)
	for _, pod := range after {
		require.Equal(t, "infra", pod.Labels["team"], "pod %s is of the new template", pod.Name)
	}
	require.NotEqual(t, uids(before), uids(after))
}

// rolledOut: one ReplicaSet holds every replica, available; the others none.
func rolledOut(state map[string]appsv1.ReplicaSet, replicas int32) bool {
	full := 0
	for _, r := range state {
		switch {
		case *r.Spec.Replicas == replicas && r.Status.AvailableReplicas == replicas && r.Labels["team"] == "infra":
			full++
		case *r.Spec.Replicas == 0 && r.Status.Replicas == 0:
		default:
			return false
		}
	}
	return full == 1
}

func describe(state map[string]appsv1.ReplicaSet) string {
	s := ""
	for name, r := range state {
		s += fmt.Sprintf("%s asks %d, %d available; ", name, *r.Spec.Replicas, r.Status.AvailableReplicas)
	}
	return s
}
