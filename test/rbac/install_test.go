package rbac

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"ate.dev/orchestrator/internal/testenv"
)

const (
	systemNamespace = "ate-system"
	workerSA        = "ate-orchestrator-worker"
	starterSA       = "ate-orchestrator-starter"
)

// rbacKinds are the objects of deploy/ that make the processes' identities.
var rbacKinds = []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// installRBAC applies the identities of `kustomize build deploy/`, as an
// admin, the way `kubectl apply -k deploy/` would. Idempotent.
func installRBAC(t *testing.T) {
	t.Helper()
	env := testenv.Current()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy")
	require.NoError(t, err, "kustomize build deploy/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	applied := map[string]int{}
	resources := m.Resources()
	// The namespace first, as kubectl orders it.
	slices.SortStableFunc(resources, func(a, b *resource.Resource) int {
		first := func(r *resource.Resource) int {
			if r.GetKind() == "Namespace" {
				return 0
			}
			return 1
		}
		return cmp.Compare(first(a), first(b))
	})
	for _, r := range resources {
		if !slices.Contains(rbacKinds, r.GetKind()) {
			continue
		}
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(b))
		require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("ate-rbac-test"), client.ForceOwnership),
			"applying %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		applied[u.GetKind()]++
	}
	for _, k := range rbacKinds {
		require.NotZero(t, applied[k], "kustomize build deploy/ has no %s", k)
	}
}

// serviceAccountUser is the user name a ServiceAccount's token
// authenticates as, the name RBAC matches ServiceAccount subjects by.
func serviceAccountUser(sa string) string {
	return "system:serviceaccount:" + systemNamespace + ":" + sa
}

// serviceAccountGroups are the groups of such a token.
var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}

// as is the admin's rest.Config impersonating a ServiceAccount: every
// request is authorized as the ServiceAccount's would be.
func as(sa string) *rest.Config {
	cfg := rest.CopyConfig(testenv.Current().RestConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(sa), Groups: serviceAccountGroups}
	return cfg
}
