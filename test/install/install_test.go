package install

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// installedKinds are the kinds an install creates.
var installedKinds = []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition", "Deployment", "Namespace", "PodDisruptionBudget", "Role", "RoleBinding", "ServiceAccount"}

// TestInstallReapplyUninstall installs each source on a cluster with no
// trace of the orchestrator, runs the processes as installed through a
// switch and a release, applies the same manifests again and uninstalls.
func TestInstallReapplyUninstall(t *testing.T) {
	for _, source := range sources {
		t.Run(source, func(t *testing.T) {
			objs := manifests(t, source)
			requireNotInstalled(t)
			bins := current.wait(t)

			// Install: every object accepted, the CRDs established.
			install(t, objs)

			// The processes, as installed, move a pool and release a config.
			orch := startOrchestrator(t, bins, objs)
			ns := poolNamespace(t)
			pools := newPools(t, ns, "install", 1)
			pools.switchTo(t, "install-second")
			pools.release(t)
			requireLeasesHeld(t)

			// Re-apply: nothing changes.
			requireReapplyChangesNothing(t, objs)

			uninstall(t, orch, bins, objs)
		})
	}
}

// requireNotInstalled fails unless the cluster has no CRD of ate.dev and
// nothing labelled part of the orchestrator: the tests start from a
// cluster the orchestrator was never installed on.
func requireNotInstalled(t testing.TB) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	require.NoError(t, admin(t).List(context.Background(), &crds))
	for _, c := range crds.Items {
		require.NotEqual(t, v1alpha1.GroupVersion.Group, c.Spec.Group, "CRD %s installed before the install", c.Name)
	}
	require.Empty(t, newKube(t).leftovers(t, nil), "objects of the orchestrator before the install")
}

// install applies objs server-side, as `kubectl apply --server-side -f
// install.yaml`, and requires that the API server accepts every object,
// the CRDs get established, and the Deployments roll out: their pods pass
// ate-system's restricted Pod Security and are scheduled on the cluster's
// nodes (kwok's, where no container really runs).
func install(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	k := newKube(t)
	objs = withoutHooks(objs)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	require.Equal(t, installedKinds, slices.Sorted(maps.Keys(kinds)), "the kinds of the manifests")
	k.apply(t, objs, false)
	for _, o := range objs {
		require.NotNil(t, k.get(t, o), "%s after the install", id(o))
	}
	t.Logf("installed %d objects: %v", len(objs), kinds)
	waitRolledOut(t, objs)
}

// waitRolledOut waits until each Deployment of objs has all its replicas
// updated and available.
func waitRolledOut(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	kc := testenv.Current().Kube
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		producttest.EventuallyWithin(t, 2*producttest.DefaultBound, "Deployment "+o.GetNamespace()+"/"+o.GetName()+" rolled out", func() (bool, string) {
			var d appsv1.Deployment
			if err := kc.Get(context.Background(), client.ObjectKeyFromObject(o), &d); err != nil {
				return false, err.Error()
			}
			want := *d.Spec.Replicas
			s := d.Status
			return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want,
				fmt.Sprintf("generation %d observed %d; replicas %d updated %d available %d of %d; conditions %+v",
					d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want, s.Conditions)
		})
	}
}

// requireReapplyChangesNothing applies objs again: a dry run returns every
// object as it is, and the real apply writes nothing (every object's
// resourceVersion unchanged, but the Deployments' and the budgets', whose
// status the controllers write, whose content then is unchanged).
func requireReapplyChangesNothing(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	k := newKube(t)
	objs = withoutHooks(objs)
	before := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		before[id(o)] = k.get(t, o)
	}
	for _, got := range k.apply(t, objs, true) {
		require.Equal(t, spec(before[id(got)]).Object, spec(got).Object, "a dry-run re-apply of %s changes it", id(got))
	}
	k.apply(t, objs, false)
	for _, o := range objs {
		after := k.get(t, o)
		b := before[id(o)]
		require.Equal(t, spec(b).Object, spec(after).Object, "re-applying %s changed it", id(o))
		require.Equal(t, b.GetGeneration(), after.GetGeneration(), "re-applying %s", id(o))
		if o.GetKind() != "Deployment" && o.GetKind() != "PodDisruptionBudget" {
			require.Equal(t, b.GetResourceVersion(), after.GetResourceVersion(), "re-applying %s wrote it", id(o))
		}
	}
}

// requireLeasesHeld requires that each process holds its Lease in
// ate-system, which only its installed Role lets it take: the pool
// reconciler and the starter's controllers run on the leaders only.
func requireLeasesHeld(t testing.TB) {
	t.Helper()
	for _, lease := range []string{workerSA, starterSA} {
		var l coordinationv1.Lease
		require.NoError(t, testenv.Current().Kube.Get(context.Background(), client.ObjectKey{Namespace: systemNamespace, Name: lease}, &l))
		require.NotNil(t, l.Spec.HolderIdentity, "Lease %s/%s", systemNamespace, lease)
		require.NotEmpty(t, *l.Spec.HolderIdentity, "Lease %s/%s", systemNamespace, lease)
	}
}

// poolNamespace is a namespace for pools, labelled for privileged Pod
// Security as docs/install.md says pool namespaces must be.
func poolNamespace(t testing.TB) string {
	t.Helper()
	env := testenv.Current()
	ns := env.Namespace(t)
	var n corev1.Namespace
	require.NoError(t, env.Kube.Get(context.Background(), client.ObjectKey{Name: ns}, &n))
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	require.NoError(t, env.Kube.Update(context.Background(), &n))
	return ns
}

// pools are gvisor WorkerPools of a namespace on the class default, and
// the configs they went through.
type pools struct {
	p       *producttest.Product // its waits and reads only: the processes run as binaries
	ns      string
	names   []string
	configs []*v1alpha1.SandboxConfig // oldest first; the last is the class default
}

// newPools creates a class default config named prefix-first and n pools
// following it, and waits until they are resolved on it with their
// Deployment applied.
func newPools(t testing.TB, ns, prefix string, n int) *pools {
	t.Helper()
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	ps := &pools{p: &producttest.Product{Env: env, Clientset: cs}, ns: ns}
	first := producttest.GVisorConfig(prefix+"-first", true)
	require.NoError(t, env.Kube.Create(context.Background(), first))
	ps.configs = append(ps.configs, first)
	t.Cleanup(func() {
		// A test that failed before its uninstall leaves pools and
		// configs; after an uninstall their CRDs are gone.
		if productCRDsServed(t, admin(t)) {
			producttest.CleanCluster(t, env.Kube)
		}
	})
	for i := range n {
		name := fmt.Sprintf("pool-%d", i)
		require.NoError(t, env.Kube.Create(context.Background(), producttest.Pool(ns, name, "")))
		ps.names = append(ps.names, name)
	}
	for _, name := range ps.names {
		ps.p.WaitForConfig(t, ns, name, first.Name, metav1.ConditionTrue)
		producttest.Eventually(t, "the Deployment of pool "+name, func() (bool, string) {
			var d appsv1.Deployment
			err := env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d)
			return err == nil, fmt.Sprint(err)
		})
	}
	return ps
}

// switchTo creates a newer class default and waits for every pool to
// follow it, with its SandboxConfigSwitched event.
func (ps *pools) switchTo(t testing.TB, name string) {
	t.Helper()
	before := ps.events(t)
	next := producttest.GVisorConfig(name, true)
	ps.p.CreateAfterOthers(t, next)
	ps.configs = append(ps.configs, next)
	for _, pool := range ps.names {
		ps.p.WaitForConfig(t, ps.ns, pool, name, metav1.ConditionTrue)
		producttest.Eventually(t, "pool "+pool+"'s SandboxConfigSwitched event to "+name, func() (bool, string) {
			evs := producttest.PoolEvents(t, ps.p.Clientset, ps.ns, pool)
			return len(evs) == len(before[pool])+1 && switchedTo(evs[len(evs)-1], name), fmt.Sprintf("%q", evs)
		})
	}
}

// switchedTo tells whether an event (as producttest.PoolEvents formats it)
// is a switch to config (workflows/switch.go's note).
func switchedTo(ev, config string) bool {
	return strings.HasPrefix(ev, "Normal "+v1alpha1.EventReasonSandboxConfigSwitched+": ") && strings.HasSuffix(ev, fmt.Sprintf(" to %q", config))
}

// release deletes every config but the class default, none of which a
// pool uses any more, and waits until each is gone: its protection
// finalizer released by the worker.
func (ps *pools) release(t testing.TB) {
	t.Helper()
	env := testenv.Current()
	old := ps.configs[:len(ps.configs)-1]
	for _, c := range old {
		require.NoError(t, client.IgnoreNotFound(env.Kube.Delete(context.Background(), c)))
	}
	for _, c := range old {
		ps.p.WaitGone(t, c.DeepCopy())
	}
	ps.configs = ps.configs[len(ps.configs)-1:]
}

// events are each pool's events, oldest first.
func (ps *pools) events(t testing.TB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, pool := range ps.names {
		out[pool] = producttest.PoolEvents(t, ps.p.Clientset, ps.ns, pool)
	}
	return out
}
