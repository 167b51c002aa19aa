package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// docker-compose.yaml's kube-setup job, hack/compose/kube-setup.sh, run
// against the test API server instead of k3s: it installs the CRDs, RBAC and
// samples, and writes a kubeconfig per process with which its
// ServiceAccount can do what that process does, and no more.
func TestKubeSetupScript(t *testing.T) {
	kubectl := findKubectl(t)
	t.Logf("using %s", kubectl)
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	outDir := t.TempDir()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(repoRoot(t), "hack", "compose", "kube-setup.sh"))
	cmd.Env = append(os.Environ(),
		// The script calls kubectl by name: this one first.
		"PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ADMIN_KUBECONFIG="+env.KubeconfigPath,
		"KUBE_SERVER=", // the admin kubeconfig's
		"DEPLOY_DIR="+filepath.Join(repoRoot(t), "deploy"),
		"KUBECONFIG_DIR="+outDir,
		"KUBECONFIG=/nonexistent", // the script must name its kubeconfig
	)
	output, err := cmd.CombinedOutput()
	t.Logf("kube-setup.sh:\n%s", output)
	if err != nil {
		t.Fatalf("kube-setup.sh: %v", err)
	}
	for _, process := range []string{"worker", "starter"} {
		if fi, err := os.Stat(filepath.Join(outDir, process)); err != nil || fi.Mode().Perm()&0o004 == 0 {
			t.Fatalf("the %s's kubeconfig is not readable by the processes' uid 65532: %v %v", process, fi, err)
		}
	}

	// The samples are in.
	var demo atev1alpha1.WorkerPool
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "ate-demo", Name: "counter"}, &demo); err != nil {
		t.Errorf("the sample WorkerPool: %v", err)
	}

	// Each kubeconfig is its process's ServiceAccount's: both read pools
	// and configs, only the worker reads Deployments, neither Secrets.
	for _, process := range []string{"worker", "starter"} {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(outDir, process))
		if err != nil {
			t.Fatal(err)
		}
		sa, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		var pools atev1alpha1.WorkerPoolList
		if err := sa.List(ctx, &pools); err != nil {
			t.Errorf("the %s's ServiceAccount cannot list WorkerPools: %v", process, err)
		}
		var configs atev1alpha1.SandboxConfigList
		if err := sa.List(ctx, &configs); err != nil {
			t.Errorf("the %s's ServiceAccount cannot list SandboxConfigs: %v", process, err)
		}
		var deployments appsv1.DeploymentList
		err = sa.List(ctx, &deployments)
		if process == "worker" && err != nil {
			t.Errorf("the worker's ServiceAccount cannot list Deployments: %v", err)
		}
		if process == "starter" && !apierrors.IsForbidden(err) {
			t.Errorf("listing Deployments as the starter's ServiceAccount: got %v, want Forbidden", err)
		}
		var secrets corev1.SecretList
		if err := sa.List(ctx, &secrets, client.InNamespace("ate-system")); !apierrors.IsForbidden(err) {
			t.Errorf("listing Secrets as the %s's ServiceAccount: got %v, want Forbidden (is it an admin kubeconfig?)", process, err)
		}
	}
}

// findKubectl is the kubectl `make tools` builds (bin/kubectl, of the
// tested Kubernetes version), else one on PATH. Without either the test
// skips, saying why, except in CI (CI=true), where `make tools` has built it
// and its absence is a failure.
func findKubectl(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(repoRoot(t), "bin", "kubectl"); isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	const why = "no kubectl: neither bin/kubectl (`make tools` or `hack/tools/install.sh kubectl` builds it) nor one on PATH"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}
