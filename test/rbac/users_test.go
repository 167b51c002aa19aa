package rbac

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/testenv"
)

// The user-facing roles of deploy/rbac/users, by the built-in role they are
// aggregated into.
var (
	userRoles = []string{"ate-workerpool-viewer", "ate-workerpool-editor", "ate-sandboxconfig-viewer", "ate-sandboxconfig-editor", "ate-rollout-operator"}
	// builtInAggregated are the built-in roles whose aggregationRule picks
	// roles by the rbac.authorization.k8s.io/aggregate-to-* labels.
	builtInAggregated = []string{"admin", "edit", "view"}
)

// runAggregationController runs a real kube-controller-manager with its
// clusterrole-aggregation controller only, against the test's API server,
// when KUBEBUILDER_ASSETS has one (`make tools` builds it for the local
// cluster); it reports whether it does. Without it the test plays the
// controller (aggregate).
func runAggregationController(t *testing.T, ctx context.Context) bool {
	t.Helper()
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	if _, err := servers.FindBinary("kube-controller-manager", binary, "KUBEBUILDER_ASSETS"); err != nil {
		t.Logf("no kube-controller-manager (%v): the test aggregates the roles itself", err)
		return false
	}
	env := testenv.Current()
	dir := t.TempDir()
	rootCA := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(rootCA, env.RestConfig.CAData, 0o644))
	kcm, err := servers.NewControllerManager(servers.ControllerManagerConfig{
		Binary: binary, Dir: dir, KubeconfigFile: env.KubeconfigPath, RootCAFile: rootCA,
		ServiceAccountKeyFile: filepath.Join(env.Dir, "kube", "kube-apiserver-certs", "sa-signer.key"),
		Controllers:           []string{"clusterrole-aggregation-controller"},
		LogFile:               filepath.Join(env.Dir, "logs", "kube-controller-manager-rbac.log"),
	})
	require.NoError(t, err)
	require.NoError(t, kcm.Start(ctx))
	t.Cleanup(func() { require.NoError(t, kcm.Stop()) })
	t.Logf("kube-controller-manager %s aggregates the roles", binary)
	return true
}

// aggregate does what kube-controller-manager's clusterrole-aggregation
// controller does, which envtest's API server runs without: it sets the
// rules of every ClusterRole with an aggregationRule to those of the
// ClusterRoles its selectors match, until nothing changes (view is itself
// aggregated into edit, and edit into admin). The selectors are the API
// server's bootstrap ones, read back, so the roles' labels are checked
// against Kubernetes' own: the test plays the controller only, as other
// packages play the Deployment controller.
func aggregate(t *testing.T, ctx context.Context) {
	t.Helper()
	kube := testenv.Current().Kube
	for pass := 0; ; pass++ {
		require.Less(t, pass, 10, "the aggregation does not settle")
		var all rbacv1.ClusterRoleList
		require.NoError(t, kube.List(ctx, &all))
		changed := false
		for i := range all.Items {
			target := &all.Items[i]
			if target.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, s := range target.AggregationRule.ClusterRoleSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&s)
				require.NoError(t, err)
				var matched rbacv1.ClusterRoleList
				require.NoError(t, kube.List(ctx, &matched, client.MatchingLabelsSelector{Selector: sel}))
				slices.SortFunc(matched.Items, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
				for _, m := range matched.Items {
					if m.Name == target.Name {
						continue
					}
					for _, r := range m.Rules {
						if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, r) }) {
							rules = append(rules, r)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, target.Rules) {
				continue
			}
			target.Rules = rules
			require.NoError(t, kube.Update(ctx, target), "aggregating ClusterRole %s", target.Name)
			changed = true
		}
		if !changed {
			return
		}
	}
}

// user is a person the cluster's RBAC knows by name, and how they are bound.
type user struct {
	name string
	// role is bound in poolNamespace by a RoleBinding, or cluster-wide by
	// a ClusterRoleBinding.
	role        string
	clusterWide bool
	allowed     []access
	denied      []access
}

func userAllowed(t *testing.T, name string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   name,
		Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name,
		},
	}}
	require.NoError(t, testenv.Current().Kube.Create(context.Background(), sar), "asking whether %s may %s", name, a)
	return sar.Status.Allowed
}

func pools(verb, subresource, namespace string) access {
	return access{verb: verb, group: "ate.dev", resource: "workerpools", subresource: subresource, namespace: namespace}
}

func configs(verb string) access {
	return access{verb: verb, group: "ate.dev", resource: "sandboxconfigs"}
}

// TestUserRolesAggregateIntoTheBuiltInRoles binds people to Kubernetes'
// built-in admin, edit and view (in a namespace, and cluster-wide) and to
// the one role that is not aggregated, and asks the API server's authorizer
// what each may do with WorkerPools and SandboxConfigs: viewers read, editors
// write pools (and scale them) in their namespace, nobody but the worker
// writes a pool's status, and SandboxConfigs are written only by those
// bound to ate-sandboxconfig-editor. The built-in roles get the product's
// rules from kube-controller-manager's aggregation controller, as in a
// cluster (runAggregationController), or from the test's copy of it.
func TestUserRolesAggregateIntoTheBuiltInRoles(t *testing.T) {
	installRBAC(t)
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The built-in roles as the API server bootstrapped them: put back
	// afterwards, so that the test starts from them when run again.
	for _, name := range builtInAggregated {
		var cr rbacv1.ClusterRole
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Name: name}, &cr))
		require.NotNil(t, cr.AggregationRule, "the built-in ClusterRole %s aggregates no roles", name)
		bootstrap := cr.Rules
		t.Cleanup(func() {
			var now rbacv1.ClusterRole
			require.NoError(t, env.Kube.Get(context.Background(), client.ObjectKey{Name: name}, &now))
			now.Rules = bootstrap
			require.NoError(t, env.Kube.Update(context.Background(), &now))
		})
	}
	for _, name := range userRoles {
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{}), "kustomize build deploy/ has no ClusterRole %s", name)
	}

	const other = "team-b"
	viewerReads := []access{
		pools("get", "", poolNamespace), pools("list", "", poolNamespace), pools("watch", "", poolNamespace),
		pools("get", "status", poolNamespace), pools("get", "scale", poolNamespace),
	}
	poolWrites := []access{
		pools("create", "", poolNamespace), pools("update", "", poolNamespace), pools("patch", "", poolNamespace),
		pools("delete", "", poolNamespace), pools("deletecollection", "", poolNamespace),
		pools("update", "scale", poolNamespace), pools("patch", "scale", poolNamespace),
	}
	statusWrites := []access{pools("update", "status", poolNamespace), pools("patch", "status", poolNamespace)}
	configReads := []access{configs("get"), configs("list"), configs("watch")}
	configWrites := []access{configs("create"), configs("update"), configs("patch"), configs("delete"), configs("deletecollection")}
	elsewhere := []access{pools("get", "", other), pools("create", "", other)}

	users := []user{
		{name: "viewer", role: "view",
			allowed: viewerReads,
			// A RoleBinding grants nothing cluster-scoped: no configs.
			denied: concat(poolWrites, statusWrites, configReads, configWrites, elsewhere)},
		{name: "editor", role: "edit",
			allowed: concat(viewerReads, poolWrites),
			denied:  concat(statusWrites, configReads, configWrites, elsewhere)},
		{name: "admin", role: "admin",
			allowed: concat(viewerReads, poolWrites),
			denied:  concat(statusWrites, configReads, configWrites, elsewhere)},
		{name: "cluster-viewer", role: "view", clusterWide: true,
			allowed: concat(viewerReads, configReads, []access{pools("list", "", ""), pools("get", "", other)}),
			denied:  concat(poolWrites, statusWrites, configWrites)},
		// edit and admin bound cluster-wide still write no SandboxConfig.
		{name: "cluster-editor", role: "edit", clusterWide: true,
			allowed: concat(viewerReads, poolWrites, configReads, elsewhere),
			denied:  concat(statusWrites, configWrites)},
		{name: "cluster-admin-role", role: "admin", clusterWide: true,
			allowed: concat(poolWrites, configReads),
			denied:  concat(statusWrites, configWrites)},
		{name: "platform", role: "ate-sandboxconfig-editor", clusterWide: true,
			allowed: concat(configReads, configWrites),
			denied:  concat(viewerReads, poolWrites, statusWrites)},
		// kubectl ate: reads configs and pools everywhere, and patches
		// configs (each rollout request is an annotation); writes nothing
		// else.
		{name: "rollout-operator", role: "ate-rollout-operator", clusterWide: true,
			allowed: concat(configReads, []access{configs("patch"), pools("get", "", poolNamespace), pools("list", "", ""), pools("watch", "", ""), pools("get", "", other)}),
			denied: concat(poolWrites, statusWrites, []access{configs("create"), configs("update"), configs("delete"), configs("deletecollection"),
				{verb: "patch", group: "ate.dev", resource: "sandboxconfigs", subresource: "status"}})},
		// Bound to nothing: nothing.
		{name: "stranger",
			denied: concat(viewerReads, configReads)},
	}

	bind(t, ctx, users)
	real := runAggregationController(t, ctx)
	if !real {
		aggregate(t, ctx)
	}
	for _, name := range builtInAggregated {
		var cr rbacv1.ClusterRole
		aggregated := func() bool {
			require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Name: name}, &cr))
			return slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.APIGroups, "ate.dev") && slices.Contains(r.Resources, "workerpools")
			})
		}
		if real {
			require.Eventually(t, aggregated, 30*time.Second, 50*time.Millisecond,
				"kube-controller-manager did not aggregate a WorkerPool role into the built-in ClusterRole %s", name)
		}
		require.True(t, aggregated(), "the built-in ClusterRole %s did not aggregate a WorkerPool role: %+v", name, cr.Rules)
	}

	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			// The authorizer sees bindings and rules through its cache:
			// wait until the first right is there, then ask about the rest.
			if len(u.allowed) > 0 {
				require.Eventually(t, func() bool { return userAllowed(t, u.name, u.allowed[0]) }, 30*time.Second, 50*time.Millisecond,
					"%s (%s) may not %s", u.name, u.role, u.allowed[0])
			}
			for _, a := range u.allowed {
				require.True(t, userAllowed(t, u.name, a), "%s (%s) may not %s", u.name, u.role, a)
			}
			for _, a := range u.denied {
				require.False(t, userAllowed(t, u.name, a), "%s (%s) may %s", u.name, u.role, a)
			}
		})
	}
}

func concat(lists ...[]access) []access { return slices.Concat(lists...) }

// bind binds each user to their role, as a cluster admin would.
func bind(t *testing.T, ctx context.Context, users []user) {
	t.Helper()
	kube := testenv.Current().Kube
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolNamespace}}
	if err := kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, u := range users {
		if u.role == "" {
			continue
		}
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.name}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: u.role}
		var obj client.Object = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "user-" + u.name, Namespace: poolNamespace}, Subjects: subjects, RoleRef: ref}
		if u.clusterWide {
			obj = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "user-" + u.name}, Subjects: subjects, RoleRef: ref}
		}
		if err := kube.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "binding %s to %s", u.name, u.role)
		}
		t.Cleanup(func() { _ = kube.Delete(context.Background(), obj) })
	}
}
