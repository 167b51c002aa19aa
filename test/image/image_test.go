package image

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// nonroot is the image's user, as the Deployments run it (runAsUser and
// runAsGroup 65532).
const nonroot = "65532:65532"

// TestImageVersion: each binary of the image prints the release's version,
// run from the image with a read-only root as the image's user; the worker
// is the image's default command (its Cmd, as the Dockerfile's CMD: no
// Entrypoint, so a container's command names the program, as the
// Deployments and docker-compose.yaml do).
func TestImageVersion(t *testing.T) {
	pm := thePodman(t)
	img := loadImage(t, pm)
	version, err := versionOf(releaseImage(t))
	require.NoError(t, err)
	require.Equal(t, nonroot, img.Config.Config.User, "the image's user")
	require.Equal(t, []string{"/usr/local/bin/worker"}, img.Config.Config.Cmd, "the image's default command")
	require.Empty(t, img.Config.Config.Entrypoint, "no entrypoint: a container's command names its program")

	for _, program := range []string{"worker", "starter", "teardown"} {
		tt := struct{ program string }{program}
		t.Run(tt.program, func(t *testing.T) {
			args := []string{"--network", "none", "--entrypoint", "/usr/local/bin/" + tt.program}
			out := pm.runOnce(t, testenv.UniqueName(t), append(args, img.ID, "--version")...)
			require.Equal(t, tt.program+" "+version+"\n", out)
		})
	}
}

// TestImageSwitchAndRelease runs the worker and the starter from the image,
// as their Deployments do (their user, a read-only root, the settings as
// environment, the credentials as read-only files) on the host network,
// against the e2e tests' local stack: a pool follows a new class default
// (a switch), and the config it left is released once no pool names it.
func TestImageSwitchAndRelease(t *testing.T) {
	pm := thePodman(t)
	img := loadImage(t, pm)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube

	tq := testenv.TaskQueue(t)
	kubeconfig := readableKubeconfig(t, env.KubeconfigPath)
	common := []string{
		"--network", "host",
		"--user", nonroot,
		"--volume", kubeconfig + ":/etc/ate/kubeconfig:ro",
		"--env", "KUBECONFIG=/etc/ate/kubeconfig",
		"--env", "TEMPORAL_ADDRESS=" + env.TemporalAddress,
		"--env", "TEMPORAL_NAMESPACE=" + env.TemporalNamespace,
		"--env", "TEMPORAL_TASK_QUEUE=" + tq,
		"--env", "METRICS_BIND_ADDRESS=0",
	}
	name := testenv.UniqueName(t)
	for _, proc := range []struct{ program, entrypoint string }{
		{"worker", ""}, // the image's default command
		{"starter", "/usr/local/bin/starter"},
	} {
		health := testenv.FreeAddr(t)
		args := append(append([]string{}, common...), "--env", "HEALTH_PROBE_BIND_ADDRESS="+health)
		if proc.entrypoint != "" {
			args = append(args, "--entrypoint", proc.entrypoint)
		}
		c := pm.start(t, name+"-"+proc.program, append(args, img.ID)...)
		c.waitReady(health)
	}

	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	// The e2e tests' helpers, on the containers' task queue; nothing of
	// the product runs in this process.
	p := &producttest.Product{Env: env, TaskQueue: tq, Clientset: cs}
	t.Cleanup(func() { // before the containers are removed
		producttest.CleanCluster(t, kube)
		p.TerminateWorkflows(t)
	})
	ns := env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("image-v1", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "follower", "")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pinned", "image-v1")))
	p.WaitForConfig(t, ns, "follower", "image-v1", metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "pinned", "image-v1", metav1.ConditionTrue)

	t.Run("switch", func(t *testing.T) {
		p.CreateAfterOthers(t, producttest.GVisorConfig("image-v2", true))
		p.WaitForConfig(t, ns, "follower", "image-v2", metav1.ConditionTrue)
		p.WaitForEvents(t, ns, "follower", []string{
			`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "image-v1"`,
			`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "image-v1" to "image-v2"`,
		})
	})

	t.Run("release", func(t *testing.T) {
		old := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: "image-v1"}}
		require.NoError(t, kube.Delete(ctx, old))
		p.WaitForRelease(t, "image-v1", wfapi.OutcomeWaiting)
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(old), old))
		require.NotNil(t, old.DeletionTimestamp)
		require.Equal(t, []string{v1alpha1.ProtectionFinalizer}, old.Finalizers, "the pinned pool still names it")

		require.NoError(t, kube.Delete(ctx, producttest.Pool(ns, "pinned", "")))
		p.WaitGone(t, old)
	})
}

// readableKubeconfig is the kubeconfig at path with every file it names
// (certificates, keys) inlined, written where the image's user can read
// it: testenv's is its owner's alone (0600), as a Secret volume mounted
// with defaultMode 0644 would not be.
func readableKubeconfig(t testing.TB, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	require.NoError(t, clientcmdapi.FlattenConfig(cfg))
	out := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, out))
	require.NoError(t, os.Chmod(out, 0o644))
	return out
}

// runOnce runs a container to its end (podman run --rm) and returns its
// standard output; the test's cleanup removes it should it be left.
func (p *podman) runOnce(t testing.TB, name string, args ...string) string {
	t.Helper()
	t.Cleanup(func() {
		if _, err := p.output("rm", "--force", "--ignore", name); err != nil {
			t.Errorf("removing container %s: %v", name, err)
		}
	})
	out, err := p.output(append(append([]string{"run", "--rm", "--name", name}, runFlags()...), args...)...)
	require.NoError(t, err)
	return out
}

// waitReady polls the container's /readyz on addr (host network) until it
// answers 200, and fails as soon as the container is no longer running.
func (c *container) waitReady(addr string) {
	c.t.Helper()
	hc := http.Client{Timeout: 2 * time.Second}
	producttest.EventuallyWithin(c.t, 2*time.Minute, c.name+" to be ready", func() (bool, string) {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, ""
			}
		}
		state := c.state()
		if !strings.HasPrefix(state, "running") {
			c.t.Fatalf("%s is %s, not running:\n%s", c.name, state, tail(c.logs(), 40))
		}
		return false, fmt.Sprintf("state %s, /readyz: %v", state, statusOf(resp, err))
	})
}

func statusOf(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}
