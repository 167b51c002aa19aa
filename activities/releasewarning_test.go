package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
)

// TestCachedUsersWarnsOfAConfigHeldByARollout: the release's look at a
// config in deletion whose pools stay on it until the rolling-out class
// default admits them records one Warning SandboxConfigDeleting regarding
// the config, naming the rollout and its step, and counting only the pools
// that wait for it (not the pinned one, not the admitted canary). Looking
// again at the same step records nothing more; the next step is a new
// Warning; a class default without a rollout, or a config not in deletion,
// records none.
func TestCachedUsersWarnsOfAConfigHeldByARollout(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	def := func(name string, created int64) *v1alpha1.SandboxConfig {
		c := sandboxConfig(name, gvisor, true, false)
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
		c.CreationTimestamp = at(created)
		return c
	}
	old := def("old", 100)
	now := metav1.Now()
	old.DeletionTimestamp = &now
	old.UID = types.UID("old-uid")
	rolling := func(step int32) *v1alpha1.SandboxConfig {
		c := def("new", 200)
		c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{}}}
		c.Status.Rollout = &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: step, AdmittedCanaries: []string{"ns/canary"}}
		return c
	}
	pool := func(name, on string, pinned bool) *v1alpha1.WorkerPool {
		wp := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}},
			Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
				Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: on},
			}}}}
		if pinned {
			wp.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: on}
		}
		return wp
	}
	canary := pool("canary", "old", false)
	canary.Labels = map[string]string{"sandboxconfig.ate.dev/canary": "true"}
	objects := func(configs ...*v1alpha1.SandboxConfig) []ctrlclient.Object {
		objs := []ctrlclient.Object{def("oldest", 50), canary, pool("a", "old", false), pool("b", "old", false), pool("pinned", "old", true)}
		for _, c := range configs {
			objs = append(objs, c)
		}
		return objs
	}
	look := func(t *testing.T, clientset *k8sfake.Clientset, objs ...ctrlclient.Object) []string {
		t.Helper()
		cache := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).
			WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
				return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
			}).Build()
		a := &Activities{Cache: cache, Clientset: clientset, Instance: "test"}
		u, err := a.CachedUsers(context.Background(), "old")
		require.NoError(t, err)
		require.Equal(t, 4, u.Count, "every pool naming the config is a user")
		list, err := clientset.EventsV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var notes []string
		for _, ev := range list.Items {
			require.Equal(t, "SandboxConfig", ev.Regarding.Kind)
			require.Equal(t, "old", ev.Regarding.Name)
			require.Equal(t, old.UID, ev.Regarding.UID)
			notes = append(notes, ev.Type+" "+ev.Reason+": "+ev.Note)
		}
		return notes
	}

	t.Run("held by a rollout: one Warning per step", func(t *testing.T) {
		cs := k8sfake.NewClientset()
		step1 := `Warning SandboxConfigDeleting: SandboxConfig "old" is being deleted; 2 pools wait for the rollout of SandboxConfig "new" (step 1)`
		require.Equal(t, []string{step1}, look(t, cs, objects(old, rolling(1))...))
		require.Equal(t, []string{step1}, look(t, cs, objects(old, rolling(1))...), "the same step looked at again: the same event, recorded once")
		got := look(t, cs, objects(old, rolling(2))...)
		require.ElementsMatch(t, []string{step1,
			`Warning SandboxConfigDeleting: SandboxConfig "old" is being deleted; 2 pools wait for the rollout of SandboxConfig "new" (step 2)`}, got)
	})
	t.Run("no rollout: no Warning", func(t *testing.T) {
		cs := k8sfake.NewClientset()
		require.Empty(t, look(t, cs, objects(old, def("new", 200))...))
	})
	t.Run("not in deletion: no Warning", func(t *testing.T) {
		cs := k8sfake.NewClientset()
		kept := def("old", 100)
		kept.UID = old.UID
		require.Empty(t, look(t, cs, objects(kept, rolling(1))...))
	})
	t.Run("the cache behind the deletion mark: the config read live", func(t *testing.T) {
		cs := k8sfake.NewClientset()
		kept := def("old", 100)
		kept.UID = old.UID
		cache := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objects(kept, rolling(1))...).
			WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
				return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
			}).Build()
		live := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(old).Build()
		a := &Activities{Cache: cache, Live: live, Clientset: cs, Instance: "test"}
		_, err := a.CachedUsers(context.Background(), "old")
		require.NoError(t, err)
		list, err := cs.EventsV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		require.Equal(t, `SandboxConfig "old" is being deleted; 2 pools wait for the rollout of SandboxConfig "new" (step 1)`, list.Items[0].Note)
	})
	t.Run("no newer default: no Warning", func(t *testing.T) {
		cs := k8sfake.NewClientset()
		require.Empty(t, look(t, cs, objects(old)...))
	})
}

func TestDeletingWarningNoteAndName(t *testing.T) {
	one := RolloutWait{Rolling: "v2", Step: 1, Pools: 1}
	require.Equal(t, `SandboxConfig "v1" is being deleted; 1 pool waits for the rollout of SandboxConfig "v2" (step 1)`,
		DeletingWarningNote("v1", gvisor, one))
	require.Equal(t, DeletingWarningName("v1", "u", one), DeletingWarningName("v1", "u", RolloutWait{Rolling: "v2", Step: 1, Pools: 7}),
		"the count is not part of the name: one Warning per step")
	require.NotEqual(t, DeletingWarningName("v1", "u", one), DeletingWarningName("v1", "u", RolloutWait{Rolling: "v2", Step: 2, Pools: 1}))
	require.NotEqual(t, DeletingWarningName("v1", "u", one), DeletingWarningName("v1", "u2", one), "another incarnation")
	require.Equal(t, "old.516e0c9c582e70d4", DeletingWarningName("old", "uid-c", RolloutWait{Rolling: "new", Step: 2}),
		"the released name (internal/events pins the spelling)")
}
