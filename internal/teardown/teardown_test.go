package teardown

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoTemporal: true})) }

func config(name string, finalizers ...string) *v1alpha1.SandboxConfig {
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec: v1alpha1.SandboxConfigSpec{
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name: "v1", PauseImage: "r.example/pause@sha256:" + strings.Repeat("b", 64),
				Assets: map[string]map[string]v1alpha1.SandboxAsset{
					"amd64": {"gvisor": {URL: "https://r.example/gvisor.tar.zstd", SHA256: strings.Repeat("c", 64)}},
				},
			}},
		},
	}
}

func TestRunRemovesOnlyTheProtectionFinalizer(t *testing.T) {
	ctx := context.Background()
	kube := testenv.Current().Kube
	const other = "example.com/keep-me"
	for _, c := range []*v1alpha1.SandboxConfig{
		config("protected", v1alpha1.ProtectionFinalizer),
		config("both", other, v1alpha1.ProtectionFinalizer),
		config("plain"),
		config("foreign", other),
	} {
		require.NoError(t, kube.Create(ctx, c))
	}
	// A config in deletion held only by the protection finalizer goes away.
	require.NoError(t, kube.Delete(ctx, config("protected")))

	rep, err := Run(ctx, kube)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"protected", "both"}, rep.Released)
	require.ElementsMatch(t, []string{"plain", "foreign"}, rep.Skipped)
	require.Contains(t, rep.String(), "removed sandboxconfig.ate.dev/workerpool-protection from 2 SandboxConfig(s)")

	var both v1alpha1.SandboxConfig
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: "both"}, &both))
	require.Equal(t, []string{other}, both.Finalizers, "other finalizers are kept")
	var gone v1alpha1.SandboxConfig
	require.Error(t, kube.Get(ctx, client.ObjectKey{Name: "protected"}, &gone), "the deleting config finished its deletion")

	again, err := Run(ctx, kube)
	require.NoError(t, err)
	require.Empty(t, again.Released, "a second run has nothing to do")
}

func TestRunWithoutTheCRDIsDone(t *testing.T) {
	// The CRD is installed in this environment; stand in for its absence
	// with the error the client's RESTMapper returns then.
	rep, err := Run(context.Background(), noMatchClient{Client: testenv.Current().Kube})
	require.NoError(t, err)
	require.True(t, rep.NoCRD)
	require.Equal(t, "the SandboxConfig CRD is not installed; nothing to do", rep.String())
}

type noMatchClient struct{ client.Client }

func (noMatchClient) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "ate.dev", Kind: "SandboxConfig"}, SearchedVersions: []string{"v1alpha1"}}
}
