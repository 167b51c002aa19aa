package kubectlate_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kubectlate"
	"ate.dev/orchestrator/internal/testenv"
)

// The plugin needs only the API server: no Temporal, no worker. The tests
// play the rollout workflow by writing status.rollout through the status
// subresource, as it does.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoTemporal: true})) }

// result is one run of the plugin.
type result struct {
	stdout, stderr string
	code           int
}

// run runs `kubectl ate args...` in-process against the test's API server,
// with the kubeconfig flag a user would give.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := kubectlate.Run(ctx, append(args, "--kubeconfig", testenv.Current().KubeconfigPath), &out, &errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func kube() ctrlclient.Client { return testenv.Current().Kube }

func ptr[T any](v T) *T { return &v }

// step is a rollout step of n pools.
func step(n int32) v1alpha1.RolloutStep { return v1alpha1.RolloutStep{Pools: ptr(n)} }

// newConfig is a valid gvisor config (a class default when def is set)
// with the steps as spec.rollout (none: no spec.rollout). It is deleted
// when the test ends: configs are cluster-scoped, and every test's
// previews and resolutions read them all.
func newConfig(t *testing.T, def bool, steps ...v1alpha1.RolloutStep) *v1alpha1.SandboxConfig {
	t.Helper()
	return newConfigNamed(t, testenv.UniqueName(t), def, steps...)
}

// newConfigNamed is newConfig with a name of the test's. Of two class
// defaults created within one second (creation times have a second's
// resolution), the one whose name sorts first is the newest.
func newConfigNamed(t *testing.T, name string, def bool, steps ...v1alpha1.RolloutStep) *v1alpha1.SandboxConfig {
	t.Helper()
	c := configObject(name, def, steps...)
	create(t, c)
	return c
}

func configObject(name string, def bool, steps ...v1alpha1.RolloutStep) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   v1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@sha256:" + strings.Repeat("a", 64),
				Assets: map[string]map[string]v1alpha1.SandboxAsset{"amd64": {"gvisor": {
					URL: "https://assets.example/gvisor.tar.zstd", SHA256: strings.Repeat("b", 64)}}},
			}},
		},
	}
	if def {
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
	}
	if len(steps) > 0 {
		c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: steps}
	}
	return c
}

// create creates obj and deletes it when the test ends.
func create(t *testing.T, obj ctrlclient.Object) {
	t.Helper()
	require.NoError(t, kube().Create(context.Background(), obj))
	t.Cleanup(func() {
		require.NoError(t, ctrlclient.IgnoreNotFound(kube().Delete(context.Background(), obj)))
	})
}

// newPool is a gvisor pool of ns following its class default, on config
// current ("" for none), canary-labelled when canary is set.
func newPool(t *testing.T, ns, name, current string, canary bool) *v1alpha1.WorkerPool {
	t.Helper()
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       ptr(int32(0)),
			WorkerImage:    "ateworker-gvisor:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
		},
	}
	if canary {
		p.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
	}
	create(t, p)
	if current != "" {
		p.Status.SandboxClasses = []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: v1alpha1.SandboxClassGVisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: current}}}
		require.NoError(t, kube().Status().Update(context.Background(), p))
	}
	return p
}

// setRollout writes status.rollout of config name, as the rollout
// workflow does, through the status subresource.
func setRollout(t *testing.T, name string, st v1alpha1.RolloutStatus) {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, kube().Get(context.Background(), ctrlclient.ObjectKey{Name: name}, &c))
	c.Status.Rollout = &st
	require.NoError(t, kube().Status().Update(context.Background(), &c))
}

func getPool(t *testing.T, ns, name string) *v1alpha1.WorkerPool {
	t.Helper()
	var p v1alpha1.WorkerPool
	require.NoError(t, kube().Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, &p))
	return &p
}

func get(t *testing.T, name string) *v1alpha1.SandboxConfig {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, kube().Get(context.Background(), ctrlclient.ObjectKey{Name: name}, &c))
	return &c
}

func requireGone(t *testing.T, name string) {
	t.Helper()
	err := kube().Get(context.Background(), ctrlclient.ObjectKey{Name: name}, &v1alpha1.SandboxConfig{})
	require.True(t, apierrors.IsNotFound(err), "SandboxConfig %s: %v", name, err)
}

// eventually polls cond until it holds, or fails the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 20*time.Millisecond, what)
}

// splitYAML splits a multi-document YAML stream.
func splitYAML(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}
