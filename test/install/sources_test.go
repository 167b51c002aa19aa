package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/hack/release/pkg/release"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// sources are the forms the orchestrator is installed from, each rendered
// to the objects a `kubectl apply --server-side` sends. Every install test
// runs once per source:
//   - "kustomize": `kubectl apply -k deploy/`;
//   - "install.yaml": the release's install.yaml, rendered by the code
//     `make release` runs (release.RenderInstall), the image pinned by a
//     digest (no node here pulls it: kwok runs no container);
//   - "chart": the Helm chart with crds.keep=false, as `helm install -n
//     ate-system --create-namespace` renders it (helmchart.Render; its
//     pre-delete hook is not applied at install, and the uninstall runs
//     teardown as it does), after the namespace `--create-namespace` makes,
//     labelled as docs/install.md says. (The default, crds.keep=true, is
//     TestHelmUninstallKeepsPools's, with the Helm SDK.)
var sources = []string{"kustomize", "install.yaml", "chart"}

// testDigest is the digest the install.yaml source pins the image to.
const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// manifests renders source at the repository's current tree.
func manifests(t testing.TB, source string) []*unstructured.Unstructured {
	t.Helper()
	root := repoRoot(t)
	switch source {
	case "kustomize":
		return kustomize(t, filepath.Join(root, "deploy"))
	case "install.yaml":
		b, err := release.RenderInstall(filepath.Join(root, "deploy"), "ghcr.io/ate-dev/ate-orchestrator", testDigest, "v0.0.0-test")
		require.NoError(t, err, "rendering install.yaml")
		objs, err := helmchart.Decode(string(b))
		require.NoError(t, err, "decoding install.yaml")
		return objs
	case "chart":
		objs, err := helmchart.Render(map[string]any{"crds": map[string]any{"keep": false}})
		require.NoError(t, err, "rendering the chart")
		return append([]*unstructured.Unstructured{releaseNamespace()}, objs...)
	default:
		t.Fatalf("unknown manifest source %q", source)
		return nil
	}
}

// releaseNamespace is the chart's namespace as the install makes it:
// `helm install --create-namespace` creates it, then docs/install.md's
// `kubectl label namespace ate-system
// pod-security.kubernetes.io/enforce=restricted`.
func releaseNamespace() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   systemNamespace,
			"labels": map[string]any{"pod-security.kubernetes.io/enforce": "restricted"},
		},
	}}
}

// kustomize runs `kustomize build dir` with kustomize's library, as
// deploy/*_test.go do, in the order the kustomize CLI and `kubectl apply
// -k` write (the legacy order: the Namespace and the CRDs first, which an
// apply in file order needs); the library's default keeps the files'
// order.
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON, for the numbers' types unstructured wants.
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(b), "%s", r.CurId())
		objs = append(objs, u)
	}
	require.NotEmpty(t, objs, "kustomize build %s", dir)
	return objs
}

// hookAnnotation marks a Helm hook: Helm creates it at its hook's moment
// (a pre-delete hook at `helm uninstall`), never with the release's
// resources.
const hookAnnotation = "helm.sh/hook"

// withoutHooks are the objects an install applies: all but Helm hooks.
func withoutHooks(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if _, hook := o.GetAnnotations()[hookAnnotation]; !hook {
			out = append(out, o)
		}
	}
	return out
}

// teardownJob is how the uninstall runs teardown: the container and
// ServiceAccount of the source's pre-delete hook Job when it has one (the
// chart's), else those of docs/install.md's documented Job
// (/usr/local/bin/teardown with no arguments, as ate-orchestrator-worker).
func teardownJob(t testing.TB, objs []*unstructured.Unstructured) (args []string, serviceAccount string) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Job" || !strings.Contains(o.GetAnnotations()[hookAnnotation], "pre-delete") {
			continue
		}
		var job batchv1.Job
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &job))
		pod := job.Spec.Template.Spec
		require.Len(t, pod.Containers, 1, "the pre-delete hook Job %s", o.GetName())
		c := pod.Containers[0]
		require.Equal(t, []string{"/usr/local/bin/teardown"}, c.Command, "the pre-delete hook Job %s runs teardown", o.GetName())
		return c.Args, pod.ServiceAccountName
	}
	return nil, workerSA
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	return root
}

// previous is the repository as it was at what an upgrade starts from:
// its tree, unpacked in a temporary directory, and its commit.
type previous struct {
	commit string
	// release is the tag of the release it is, or "" for a plain commit.
	release string
	dir     string
}

// previousRelease picks what users upgrade from: the newest release among
// HEAD's ancestors other than HEAD itself (release.FindPrevious: its tag, or
// in a clone without tags the commit that added its CHANGELOG.md heading),
// so that the upgrade a user makes is the one tested. Before the first
// release the previous commit (HEAD~1) stands in for it. It unpacks that
// commit (`git archive <rev> | tar -x`). With none (the first commit, or a
// shallow clone of depth 1, which .ci/run deepens) the test is skipped with
// the reason, except under CI=true, where it fails: CI must test the upgrade.
func previousRelease(t testing.TB) previous {
	t.Helper()
	root := repoRoot(t)
	found, err := release.FindPrevious(root, "HEAD")
	if err != nil {
		reason := "nothing to upgrade from: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; CI must test the upgrade (.ci/run deepens a shallow clone and fetches tags)", reason)
		}
		t.Skip(reason)
	}
	p := previous{commit: found.Commit, release: found.Version}
	p.dir = t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", p.commit)
	untar := exec.Command("tar", "-x", "-C", p.dir)
	pipe, err := archive.StdoutPipe()
	require.NoError(t, err)
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr, untar.Stderr = &stderr, &stderr
	require.NoError(t, untar.Start())
	require.NoError(t, archive.Run(), "git archive %s: %s", p.commit, stderr.String())
	require.NoError(t, untar.Wait(), "tar -x: %s", stderr.String())
	return p
}

// String names it in logs.
func (p previous) String() string {
	if p.release != "" {
		return fmt.Sprintf("release %s (%s)", p.release, p.commit)
	}
	return fmt.Sprintf("commit %s (no release before HEAD)", p.commit)
}

// manifests renders the previous tree's deploy/ (its kustomize source:
// a release's install.yaml is that render with the image pinned).
func (p previous) manifests(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	return kustomize(t, filepath.Join(p.dir, "deploy"))
}
