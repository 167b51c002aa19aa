package kubectlate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kubectlate"
	"ate.dev/orchestrator/internal/testenv"
)

// rolloutOperatorRole is the ClusterRole deploy/rbac/users ships for
// `kubectl ate`.
func rolloutOperatorRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac", "users", "roles.yaml"))
	require.NoError(t, err)
	docs, err := splitYAML(b)
	require.NoError(t, err)
	for _, d := range docs {
		var cr rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal(d, &cr))
		if cr.Kind == "ClusterRole" && cr.Name == "ate-rollout-operator" {
			return &cr
		}
	}
	t.Fatal("deploy/rbac/users/roles.yaml has no ClusterRole ate-rollout-operator")
	return nil
}

// TestEveryVerbUnderTheRolloutOperatorRole runs every verb as a user bound
// to ate-rollout-operator alone (kubectl's --as): the plugin needs nothing
// else, no exec into a pod, no Temporal. A user bound to nothing is
// refused.
func TestEveryVerbUnderTheRolloutOperatorRole(t *testing.T) {
	role := rolloutOperatorRole(t)
	role.ResourceVersion = ""
	create(t, role)
	const user = "rollout-op"
	create(t, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-ate-rollout-op"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})

	ns := testenv.Current().Namespace(t)
	old := newConfigNamed(t, "z-"+testenv.UniqueName(t), true)
	c := newConfigNamed(t, "a-"+testenv.UniqueName(t), true, step(1))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingApproval, Step: 1, TotalPools: 1})
	newPool(t, ns, "pool", old.Name, false)
	file := filepath.Join(t.TempDir(), "config.yaml")
	b, err := yaml.Marshal(configObject("b-"+testenv.UniqueName(t), true, step(1)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append([]byte("apiVersion: ate.dev/v1alpha1\nkind: SandboxConfig\n"), b...), 0o644))

	as := func(args ...string) []string { return append(args, "--as", user) }
	// The authorizer sees the new binding through its cache: wait for it.
	eventually(t, "the binding is in effect", func() bool { return run(t, as("rollout", "status", c.Name)...).code == kubectlate.ExitOK })
	for _, args := range [][]string{
		{"rollout", "status", c.Name},
		{"rollout", "list"},
		{"rollout", "preview", c.Name},
		{"rollout", "preview", "-f", file},
		{"rollout", "pause", c.Name},
		{"rollout", "resume", c.Name},
		{"rollout", "retry", c.Name},
		{"rollout", "promote", c.Name},
		{"rollout", "promote", "--full", c.Name},
		{"rollout", "abort", c.Name},
		{"pool", "why", ns + "/pool"},
		{"version"},
	} {
		res := run(t, as(args...)...)
		require.Equal(t, 0, res.code, "kubectl ate %v as %s: %s", args, user, res.stderr)
	}
	// -w watches: it ends once the rollout does.
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutCompleted, Step: 1, TotalPools: 1})
	res := run(t, as("rollout", "status", c.Name, "-w", "--timeout", "30s")...)
	require.Equal(t, 0, res.code, res.stderr)

	res = run(t, "rollout", "pause", c.Name, "--as", "stranger")
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "forbidden")
}
