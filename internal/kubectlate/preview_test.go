package kubectlate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rolloutplan"
	"ate.dev/orchestrator/internal/testenv"
)

// TestPreview: the plan of an applied config, and of a file not applied
// yet that makes a new class default with steps, over the pools of a
// namespace: canary first, then by name; pinned pools are no rollout's.
func TestPreview(t *testing.T) {
	ns := testenv.Current().Namespace(t)
	// The old default's name sorts after the new ones': a new default
	// created in the same second is still the newest.
	old := newConfigNamed(t, "z-"+testenv.UniqueName(t), true)
	newPool(t, ns, "p1", old.Name, false)
	newPool(t, ns, "p2", old.Name, false)
	newPool(t, ns, "p3", old.Name, true)
	newPool(t, ns, "p4", old.Name, false)
	pinned := newPool(t, ns, "p5", old.Name, false)
	pinned.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: old.Name}
	require.NoError(t, kube().Update(t.Context(), pinned))
	key := func(names ...string) string {
		for i := range names {
			names[i] = ns + "/" + names[i]
		}
		return strings.Join(names, " ")
	}

	t.Run("file", func(t *testing.T) {
		// A pull request's new class default: not in the cluster yet.
		c := configObject("a-"+testenv.UniqueName(t), true, step(1), v1alpha1.RolloutStep{Percent: ptr(int32(50)), Approval: true}, v1alpha1.RolloutStep{Percent: ptr(int32(100))})
		c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "SandboxConfig"
		c.Spec.Rollout.Steps[0].Pause = &metav1.Duration{Duration: 10 * time.Minute}
		b, err := yaml.Marshal(c)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "config.yaml")
		other := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n"
		require.NoError(t, os.WriteFile(file, append([]byte(other), b...), 0o644))

		res := run(t, "rollout", "preview", "-f", file)
		require.Equal(t, 0, res.code, res.stderr)
		require.Contains(t, res.stderr, "document 1 is a v1 ConfigMap, not a SandboxConfig: ignored")
		require.Equal(t, strings.Join([]string{
			"SandboxConfig " + c.Name + " (from " + file + ", as if applied) is the gvisor default; its rollout (not started, step 0) from here, over 4 unpinned pools:",
			"  admitted already (0): ",
			"  step 1: 1 on it once done, then bake 10m0s; moves 1: " + key("p3"),
			"  step 2: 2 on it once done, then wait for approval; moves 1: " + key("p1"),
			"  step 3: 4 on it once done; moves 2: " + key("p2", "p4"),
			"If it lost the annotation: 0 pools would move to " + old.Name + " at once: ",
			"",
		}, "\n"), res.stdout)
		requireGone(t, c.Name) // a preview applies nothing

		res = run(t, "rollout", "preview", "-f", file, "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		var p rolloutplan.Preview
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &p))
		require.True(t, p.Default)
		require.Equal(t, file, p.Source)
		require.Len(t, p.Plan.Steps, 3)
	})

	t.Run("applied", func(t *testing.T) {
		c := newConfigNamed(t, "a-"+testenv.UniqueName(t), true, step(2), v1alpha1.RolloutStep{Percent: ptr(int32(100))})
		// The rollout admitted and moved the canary, and stands at step 1.
		setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1,
			AdmittedCanaries: []string{ns + "/p3"}, AdmittedThrough: &v1alpha1.RolloutPoolRef{Namespace: ns, Name: "p1"}})
		p3 := getPool(t, ns, "p3")
		p3.Status.SandboxClasses[0].ConfigRef.Name = c.Name
		require.NoError(t, kube().Status().Update(t.Context(), p3))

		res := run(t, "rollout", "preview", c.Name)
		require.Equal(t, 0, res.code, res.stderr)
		require.Contains(t, res.stdout, "SandboxConfig "+c.Name+" is the gvisor default; its rollout (Baking, step 1) from here, over 4 unpinned pools:\n")
		require.Contains(t, res.stdout, "  admitted already (2): "+key("p3", "p1")+"\n")
		require.Contains(t, res.stdout, "  step 2: 4 on it once done; moves 2: "+key("p2", "p4")+"\n")
		require.Contains(t, res.stdout, "If it lost the annotation: 1 pools would move to "+old.Name+" at once: "+key("p3")+"\n")
	})

	t.Run("refuses", func(t *testing.T) {
		res := run(t, "rollout", "preview", "no-such-config")
		require.Equal(t, 1, res.code)
		require.Contains(t, res.stderr, `SandboxConfig "no-such-config" not found`)
		res = run(t, "rollout", "preview")
		require.Equal(t, 1, res.code)
		require.Contains(t, res.stderr, "NAME or -f FILE")
		file := filepath.Join(t.TempDir(), "bad.yaml")
		require.NoError(t, os.WriteFile(file, []byte("apiVersion: ate.dev/v1alpha1\nkind: SandboxConfig\nmetadata:\n  name: x\nspec:\n  rolout: {}\n"), 0o644))
		res = run(t, "rollout", "preview", "-f", file)
		require.Equal(t, 1, res.code)
		require.Contains(t, res.stderr, `unknown field "rolout"`)
	})
}
