package testenv

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/searchattr"
)

// The self-test persists Temporal's state so it can test restarts.
func TestMain(m *testing.M) { os.Exit(Main(m, Options{PersistTemporal: true})) }

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func gvisorConfig(name string) *atev1alpha1.SandboxConfig {
	return &atev1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: atev1alpha1.SandboxConfigSpec{
			SandboxClass:   atev1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []atev1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@" + digest,
				Assets: map[string]map[string]atev1alpha1.SandboxAsset{
					"amd64": {"gvisor": {URL: "https://assets.example/gvisor.tar.zstd", SHA256: strings.Repeat("b", 64)}},
				},
			}},
		},
	}
}

func TestKubernetesServesTheCRDs(t *testing.T) {
	env := Current()
	ctx := context.Background()
	ns := env.Namespace(t)
	require.True(t, strings.HasPrefix(ns, "testkubernetesservesthecrds-"), ns)

	// Cluster-scoped SandboxConfig, defaulted and validated by the real CRD.
	sc := gvisorConfig(UniqueName(t))
	require.NoError(t, env.Kube.Create(ctx, sc))
	t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), sc) })
	var got atev1alpha1.SandboxConfig
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(sc), &got))
	require.Equal(t, atev1alpha1.VersionStateEnabled, got.Spec.Versions[0].State, "CRD default applied")

	bad := gvisorConfig(UniqueName(t))
	bad.Spec.Versions[0].PauseImage = ""
	err := env.Kube.Create(ctx, bad)
	require.True(t, apierrors.IsInvalid(err), "a gvisor config without pauseImage must be rejected, got %v", err)

	// Namespaced WorkerPool in the test's namespace, with its status subresource.
	wp := &atev1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec: atev1alpha1.WorkerPoolSpec{
			Replicas:       ptr.To[int32](1),
			WorkerImage:    "registry.example/worker:1",
			SandboxClasses: []atev1alpha1.WorkerPoolSandboxClass{{Name: atev1alpha1.SandboxClassGVisor}},
		},
	}
	require.NoError(t, env.Kube.Create(ctx, wp))
	wp.Status.ObservedGeneration = wp.Generation
	require.NoError(t, env.Kube.Status().Update(ctx, wp))
}

func TestTemporalServesTheNamespace(t *testing.T) {
	env := Current()
	ctx := context.Background()
	resp, err := env.Temporal.WorkflowService().DescribeNamespace(ctx,
		&workflowservice.DescribeNamespaceRequest{Namespace: env.TemporalNamespace})
	require.NoError(t, err)
	require.Equal(t, env.TemporalNamespace, resp.GetNamespaceInfo().GetName())

	sas, err := env.Temporal.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: env.TemporalNamespace})
	require.NoError(t, err)
	for _, d := range searchattr.Definitions {
		require.Equal(t, d.Type, sas.GetCustomAttributes()[d.Name], "search attribute %s", d.Name)
	}
}

func echo(ctx workflow.Context, s string) (string, error) {
	var got string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &got)
	return s + got, nil
}

// A workflow indexed by a custom search attribute can be found by it, and
// a workflow that was running when the server restarted completes after it.
func TestTemporalWorkflowsSurviveRestart(t *testing.T) {
	env := Current()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := TaskQueue(t)
	w := worker.New(env.Temporal, tq, worker.Options{})
	w.RegisterWorkflow(echo)
	require.NoError(t, w.Start())
	defer w.Stop()

	pool := "ns/" + UniqueName(t)
	run, err := env.Temporal.ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{
		ID:                    "echo/" + pool,
		TaskQueue:             tq,
		TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.WorkerPoolKey.ValueSet(pool)),
	}, echo, "hello ")
	require.NoError(t, err)

	query := searchattr.WorkerPool + `="` + pool + `"`
	require.Eventually(t, func() bool {
		resp, err := env.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.GetExecutions()) == 1
	}, 30*time.Second, 200*time.Millisecond, "listing by %s", query)

	require.NoError(t, env.KillTemporal())
	require.NoError(t, env.StartTemporal(ctx))

	require.Eventually(t, func() bool {
		return env.Temporal.SignalWorkflow(ctx, run.GetID(), "", "go", "world") == nil
	}, 30*time.Second, 200*time.Millisecond, "signalling after the restart")
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "hello world", out)

	desc, err := env.Temporal.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
}

func TestKubeAPIServerRestart(t *testing.T) {
	env := Current()
	ctx := context.Background()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}, Data: map[string]string{"k": "v"}}
	require.NoError(t, env.Kube.Create(ctx, cm))

	require.NoError(t, env.KillKubeAPIServer())
	require.Error(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}), "the API server is down")
	require.NoError(t, env.StartKubeAPIServer())

	var got corev1.ConfigMap
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(cm), &got), "same address and credentials, data kept in etcd")
	require.Equal(t, "v", got.Data["k"])

	require.NoError(t, env.RestartKubeAPIServer())
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(cm), &got))
}

func TestStartFailsClearlyWithoutBinary(t *testing.T) {
	t.Setenv("ATE_TEMPORAL_CLI", "/nonexistent/temporal")
	_, err := Start(Options{NoKube: true})
	require.Error(t, err)
	require.True(t, errors.Is(err, servers.ErrMissingBinary), "%v", err)
	require.Contains(t, err.Error(), "run `make tools`")
	require.Contains(t, err.Error(), "/nonexistent/temporal")

	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err = Start(Options{NoTemporal: true})
	require.ErrorContains(t, err, "etcd not found")
	require.ErrorContains(t, err, "from $KUBEBUILDER_ASSETS")
	require.ErrorContains(t, err, "run `make tools`")
}

func TestUniqueName(t *testing.T) {
	a, b := UniqueName(t), UniqueName(t)
	require.NotEqual(t, a, b)
	require.Regexp(t, `^testuniquename-[0-9a-f]{8}$`, a)

	t.Run("A Very/Long_Name that is longer than any DNS label could possibly be allowed to be", func(t *testing.T) {
		n := UniqueName(t)
		require.LessOrEqual(t, len(n), 63)
		require.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, n)
	})
}
