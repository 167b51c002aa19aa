package install

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// uninstall removes an install as docs/install.md's "Uninstall" says
// (and the chart's pre-delete hook does): the processes stop (their
// Deployments deleted), teardown runs as the documented Job runs it (the
// worker's ServiceAccount, no arguments) and releases every
// SandboxConfig's protection finalizer, then every object of the install is
// deleted, the CRDs last. It requires that teardown succeeds, that no
// SandboxConfig stays Terminating (the CRDs, which wait for their objects,
// are gone) and that nothing of the install remains, by label and by the
// rendered list.
func uninstall(t testing.TB, orch *orchestrator, bins *binaries, objs []*unstructured.Unstructured) {
	t.Helper()
	k := newKube(t)
	ctx := context.Background()
	if orch != nil {
		orch.stop(t)
	}
	for _, role := range []string{"worker", "starter"} {
		err := k.resource(t, find(t, objs, "Deployment", "ate-orchestrator-"+role)).Delete(ctx, "ate-orchestrator-"+role, metav1.DeleteOptions{})
		require.NoError(t, ignoreNotFound(err))
	}

	// The Job: /usr/local/bin/teardown with its arguments, as its
	// ServiceAccount (the in-cluster config; here a kubeconfig
	// impersonating it).
	args, sa := teardownJob(t, objs)
	require.Equal(t, workerSA, sa, "teardown runs as the worker's ServiceAccount, which may patch SandboxConfigs")
	runTeardown(t, bins, args, sa)

	k.deleteAll(t, objs)
	// The CRDs are gone, so no SandboxConfig or WorkerPool is left,
	// Terminating or not.
	a := admin(t)
	for _, crd := range productCRDs {
		err := a.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})
		require.True(t, apierrors.IsNotFound(err), "CRD %s after the uninstall: %v", crd, err)
	}
}

// runTeardown runs teardown with args as the ServiceAccount sa (the Job's:
// the in-cluster config; here a kubeconfig impersonating it) and requires
// that no SandboxConfig keeps the protection finalizer.
func runTeardown(t testing.TB, bins *binaries, args []string, sa string) {
	t.Helper()
	cmd := exec.Command(bins.teardown, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + impersonating(t, sa)}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "teardown %v as %s: %s", args, sa, stderr.String())
	t.Logf("teardown: %s", strings.TrimSpace(stdout.String()))
	var configs v1alpha1.SandboxConfigList
	require.NoError(t, testenv.Current().Kube.List(context.Background(), &configs))
	for _, c := range configs.Items {
		require.NotContains(t, c.Finalizers, v1alpha1.ProtectionFinalizer, "SandboxConfig %s after teardown", c.Name)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
