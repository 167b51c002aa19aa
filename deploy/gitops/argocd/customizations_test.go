package argocd_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/deploy/gitops/argocd"
)

// argocd-cm.yaml is what `make generate` writes from the Lua: edit the Lua
// and run it.
func TestConfigMapIsGenerated(t *testing.T) {
	want, err := argocd.ConfigMap()
	require.NoError(t, err)
	got, err := os.ReadFile("argocd-cm.yaml")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "deploy/gitops/argocd/argocd-cm.yaml is stale: run `make generate`")

	// The block scalars kept every script as its file has it.
	health, actions := installed(t)
	wantHealth, err := argocd.Health()
	require.NoError(t, err)
	require.Equal(t, wantHealth, health)
	wantActions, err := argocd.ReadActions()
	require.NoError(t, err)
	require.Equal(t, wantActions, actions)
}

// allPhases are the CRD's status.rollout.phase values.
var allPhases = func() []v1alpha1.RolloutPhase {
	b, err := os.ReadFile("../../crds/ate.dev_sandboxconfigs.yaml")
	if err != nil {
		panic(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Status struct {
								Properties struct {
									Rollout struct {
										Properties struct {
											Phase struct {
												Enum []v1alpha1.RolloutPhase `json:"enum"`
											} `json:"phase"`
										} `json:"properties"`
									} `json:"rollout"`
								} `json:"properties"`
							} `json:"status"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		panic(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Status.Properties.Rollout.Properties.Phase.Enum
}()

// phaseOf is a fixture's status.rollout.phase.
func phaseOf(obj map[string]any) (string, bool) {
	st, _ := obj["status"].(map[string]any)
	r, _ := st["rollout"].(map[string]any)
	p, ok := r["phase"].(string)
	return p, ok
}

// Each action.lua in Argo CD's layout is what ./gen writes from
// action.lua.tmpl for its request (run `make generate` after an edit), and
// there is no action beside the requests.
func TestActionsAreGenerated(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(argocd.Dir, "actions"))
	require.NoError(t, err)
	var names []string
	for _, d := range dirs {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	var want []string
	for _, r := range argocd.Requests {
		want = append(want, r.Name)
		lua, err := argocd.ActionLua(r)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(argocd.Dir, "actions", r.Name, "action.lua"))
		require.NoError(t, err)
		require.Equal(t, lua, string(got), "%s/action.lua is stale: run make generate", r.Name)
	}
	require.Equal(t, want, names)
}
