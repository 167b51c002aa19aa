package rbac

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"ate.dev/orchestrator/internal/testenv"
)

// access is one request a process may or may not make.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	ns := a.namespace
	if ns == "" {
		ns = "(all namespaces)"
	}
	return fmt.Sprintf("%s %s in %s", a.verb, r, ns)
}

// A namespace of pools, as any would be: the processes act on WorkerPools
// in every namespace.
const poolNamespace = "team-a"

// Every verb each process's code uses (the RBAC markers in activities/,
// worker/ with its pool keeper, and starter/), and a sample of what it must
// not do.
var (
	// metricsReviews are what both processes' HTTPS metrics endpoints ask
	// the API server about each scraper (internal/probes.ServeMetrics).
	metricsReviews = []access{
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"},
	}
	workerAllowed = append([]access{
		{verb: "get", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "list", group: "ate.dev", resource: "workerpools"},
		{verb: "watch", group: "ate.dev", resource: "workerpools"},
		{verb: "update", group: "ate.dev", resource: "workerpools", subresource: "status", namespace: poolNamespace},
		{verb: "get", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "list", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "watch", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "patch", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "patch", group: "ate.dev", resource: "sandboxconfigs", subresource: "status"}, // a staged rollout's status
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: "default"},   // a rollout's Warning on its config
		{verb: "get", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "list", group: "apps", resource: "deployments"},
		{verb: "watch", group: "apps", resource: "deployments"},
		{verb: "create", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "patch", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: poolNamespace},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "create", resource: "events", namespace: systemNamespace},
	}, metricsReviews...)
	workerDenied = []access{
		{verb: "update", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "patch", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "delete", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "create", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "delete", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "delete", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "list", resource: "secrets", namespace: systemNamespace},
		{verb: "get", resource: "secrets", namespace: poolNamespace},
		{verb: "list", resource: "pods", namespace: poolNamespace},
		{verb: "create", resource: "events", namespace: poolNamespace},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"},
		{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
	}
	starterAllowed = append([]access{
		{verb: "get", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "list", group: "ate.dev", resource: "workerpools"},
		{verb: "watch", group: "ate.dev", resource: "workerpools"},
		{verb: "get", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "list", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "watch", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace},
		{verb: "create", resource: "events", namespace: systemNamespace},
	}, metricsReviews...)
	starterDenied = []access{
		{verb: "patch", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "patch", group: "ate.dev", resource: "sandboxconfigs", subresource: "status"},
		{verb: "update", group: "ate.dev", resource: "sandboxconfigs"},
		{verb: "update", group: "ate.dev", resource: "workerpools", subresource: "status", namespace: poolNamespace},
		{verb: "patch", group: "ate.dev", resource: "workerpools", subresource: "status", namespace: poolNamespace},
		{verb: "patch", group: "ate.dev", resource: "workerpools", namespace: poolNamespace},
		{verb: "create", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "patch", group: "apps", resource: "deployments", namespace: poolNamespace},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: poolNamespace},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"},
		{verb: "list", resource: "secrets", namespace: systemNamespace},
		{verb: "create", resource: "events", namespace: poolNamespace},
	}
)

// TestRolesGrantWhatEachProcessUsesAndNoMore asks the API server's
// authorizer, through SubjectAccessReviews, about every request each
// ServiceAccount's process makes and a sample of others.
func TestRolesGrantWhatEachProcessUsesAndNoMore(t *testing.T) {
	installRBAC(t)
	tests := []struct {
		sa              string
		allowed, denied []access
	}{
		{sa: workerSA, allowed: workerAllowed, denied: workerDenied},
		{sa: starterSA, allowed: starterAllowed, denied: starterDenied},
	}
	for _, tt := range tests {
		t.Run(tt.sa, func(t *testing.T) {
			for _, a := range tt.allowed {
				require.True(t, allowed(t, tt.sa, a), "%s may not %s; its code does", tt.sa, a)
			}
			for _, a := range tt.denied {
				require.False(t, allowed(t, tt.sa, a), "%s may %s; it needs not", tt.sa, a)
			}
		})
	}
	// Each process's role lacks the other's writes.
	for _, a := range workerAllowed {
		if a.verb != "get" && a.verb != "list" && a.verb != "watch" && a.namespace != systemNamespace && !slices.Contains(metricsReviews, a) {
			require.False(t, allowed(t, starterSA, a), "the starter may %s, which only the worker does", a)
		}
	}
}

func allowed(t *testing.T, sa string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   serviceAccountUser(sa),
		Groups: serviceAccountGroups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name,
		},
	}}
	require.NoError(t, testenv.Current().Kube.Create(context.Background(), sar), "asking whether %s may %s", sa, a)
	return sar.Status.Allowed
}
