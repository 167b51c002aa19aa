package install

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmkube "helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestHelmUninstallKeepsPools installs the chart with its defaults as
// docs/install.md does, `helm install ate-orchestrator deploy/chart -n
// ate-system --create-namespace`, with the Helm SDK against the local
// cluster; the processes, as installed, resolve a pool and give it its
// workers; `helm uninstall` then removes the orchestrator and leaves the
// CRDs, the WorkerPool, the SandboxConfig with its protection and the pool's
// workers in place (crds.keep). Then docs/install.md's way to remove
// everything: install again, `helm upgrade --reuse-values --set
// crds.keep=false`, uninstall.
func TestHelmUninstallKeepsPools(t *testing.T) {
	requireNotInstalled(t)
	bins := current.wait(t)
	env := testenv.Current()
	ctx := context.Background()
	a := admin(t)
	cfg := helmConfig(t)

	ch, err := loader.Load(helmchart.ChartDir())
	require.NoError(t, err)
	in := action.NewInstall(cfg)
	in.ReleaseName = helmchart.ReleaseName
	in.Namespace = systemNamespace
	in.CreateNamespace = true
	in.WaitStrategy = helmkube.HookOnlyStrategy // the helm CLI's default
	r, err := in.RunWithContext(ctx, ch, map[string]any{})
	require.NoError(t, err, "helm install -n %s --create-namespace", systemNamespace)
	rel := r.(*releasev1.Release)
	t.Cleanup(func() { removeKeptInstall(t) })
	// docs/install.md: the namespace enforces Pod Security `restricted`.
	var ns corev1.Namespace
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Name: systemNamespace}, &ns))
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	require.NoError(t, env.Kube.Update(ctx, &ns))

	objs, err := helmchart.Decode(rel.Manifest)
	require.NoError(t, err)
	for _, o := range objs {
		require.NotEqual(t, "Namespace", o.GetKind(), "the chart renders the release's namespace")
	}
	waitRolledOut(t, objs)

	orch := startOrchestrator(t, bins, objs)
	poolNS := poolNamespace(t)
	ps := newPools(t, poolNS, "helm", 1)
	orch.stop(t)

	un := action.NewUninstall(cfg)
	un.WaitStrategy = helmkube.HookOnlyStrategy
	_, err = un.Run(helmchart.ReleaseName)
	require.NoError(t, err, "helm uninstall")

	// The orchestrator is gone...
	k := newKube(t)
	producttest.EventuallyWithin(t, time.Minute, "the release's other objects to be gone", func() (bool, string) {
		var left []string
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue
			}
			if _, err := k.resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, id(o))
			}
		}
		return len(left) == 0, "left: " + strings.Join(left, "; ")
	})
	// ...and the users' objects stay, as they were.
	for _, crd := range productCRDs {
		var c apiextensionsv1.CustomResourceDefinition
		require.NoError(t, a.Get(ctx, client.ObjectKey{Name: crd}, &c), "CRD %s after helm uninstall", crd)
		require.Nil(t, c.DeletionTimestamp, "CRD %s", crd)
	}
	for _, name := range ps.names {
		var wp v1alpha1.WorkerPool
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: name}, &wp), "WorkerPool %s after helm uninstall", name)
		require.Nil(t, wp.DeletionTimestamp)
		var d appsv1.Deployment
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: name}, &d), "the workers of pool %s after helm uninstall", name)
		require.Nil(t, d.DeletionTimestamp)
	}
	var sc v1alpha1.SandboxConfig
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Name: ps.configs[0].Name}, &sc), "SandboxConfig after helm uninstall")
	require.Contains(t, sc.Finalizers, v1alpha1.ProtectionFinalizer, "the config a pool uses keeps its protection")

	// docs/install.md: installed again, the chart takes the kept CRDs over
	// and the pool is where it was; to remove everything, the release is
	// switched to crds.keep=false, then uninstalled.
	r, err = in.RunWithContext(ctx, ch, map[string]any{})
	require.NoError(t, err, "helm install again, over the kept CRDs")
	objs, err = helmchart.Decode(r.(*releasev1.Release).Manifest)
	require.NoError(t, err)
	waitRolledOut(t, objs)
	orch = startOrchestrator(t, bins, objs)
	ps.p.WaitForConfig(t, poolNS, ps.names[0], ps.configs[0].Name, metav1.ConditionTrue)
	orch.stop(t)

	up := action.NewUpgrade(cfg)
	up.Namespace = systemNamespace
	up.ReuseValues = true
	up.WaitStrategy = helmkube.HookOnlyStrategy
	r, err = up.RunWithContext(ctx, helmchart.ReleaseName, ch, map[string]any{"crds": map[string]any{"keep": false}})
	require.NoError(t, err, "helm upgrade --reuse-values --set crds.keep=false")
	rel = r.(*releasev1.Release)
	for _, crd := range productCRDs {
		var c apiextensionsv1.CustomResourceDefinition
		require.NoError(t, a.Get(ctx, client.ObjectKey{Name: crd}, &c))
		require.NotContains(t, c.Annotations, "helm.sh/resource-policy", "CRD %s after the upgrade to crds.keep=false", crd)
	}
	// The pre-delete hook's Job cannot run here (no Job controller, no
	// container runtime): the uninstall skips it (--no-hooks) and the test
	// runs its teardown as uninstall() does, as the Job would, first.
	var hooks []*unstructured.Unstructured
	for _, h := range rel.Hooks {
		hs, err := helmchart.Decode(h.Manifest)
		require.NoError(t, err)
		hooks = append(hooks, hs...)
	}
	args, sa := teardownJob(t, hooks)
	require.Equal(t, workerSA, sa)
	require.Len(t, hooks, 1, "the teardown hook, with crds.keep=false")
	runTeardown(t, bins, args, sa)
	un = action.NewUninstall(cfg)
	un.WaitStrategy = helmkube.HookOnlyStrategy
	un.DisableHooks = true
	_, err = un.Run(helmchart.ReleaseName)
	require.NoError(t, err, "helm uninstall --no-hooks")
	producttest.EventuallyWithin(t, 3*time.Minute, "the CRDs, and with them every pool and config, to be gone", func() (bool, string) {
		var left []string
		for _, crd := range productCRDs {
			if err := a.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				left = append(left, "CRD "+crd)
			}
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
}

// helmConfig is the Helm SDK's configuration of the helm CLI run with the
// test's kubeconfig: release records as Secrets in ate-system.
func helmConfig(t testing.TB) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	path, ns := testenv.Current().KubeconfigPath, systemNamespace
	flags.KubeConfig, flags.Namespace = &path, &ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, cfg.Init(flags, systemNamespace, "secret"))
	return cfg
}

// removeKeptInstall removes what a kept uninstall leaves, as the test's
// admin (the orchestrator, which would release the configs, is gone): the
// pools and configs, their finalizers removed, the CRDs and the namespace,
// so that the next test starts from a cluster without the orchestrator.
func removeKeptInstall(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	env := testenv.Current()
	a := admin(t)
	if productCRDsServed(t, a) {
		producttest.CleanCluster(t, env.Kube)
	}
	for _, crd := range productCRDs {
		require.NoError(t, client.IgnoreNotFound(a.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd}})))
	}
	require.NoError(t, client.IgnoreNotFound(a.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}})))
	producttest.EventuallyWithin(t, 3*time.Minute, "the CRDs and the namespace to be gone", func() (bool, string) {
		var left []string
		for _, crd := range productCRDs {
			if err := a.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				left = append(left, "CRD "+crd)
			}
		}
		if err := a.Get(ctx, client.ObjectKey{Name: systemNamespace}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			left = append(left, "Namespace "+systemNamespace)
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
}
