package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/wfapi"
)

// IdentityNamespace is the namespace whose UID names a cluster that was
// given no name: every cluster has it from its first start, the API server
// never deletes it, and an upgrade keeps it.
const IdentityNamespace = metav1.NamespaceSystem

// ClusterIdentity is the cluster a worker or starter serves: name, when the
// operator set one (--cluster-name), else the UID of the cluster's
// kube-system namespace. Two clusters restored from one etcd snapshot share
// that UID, so only names set them apart (docs/many-clusters.md).
func ClusterIdentity(ctx context.Context, cs kubernetes.Interface, name string) (wfapi.Cluster, error) {
	if name != "" {
		c := wfapi.Cluster(name)
		if err := c.Validate(); err != nil {
			return "", fmt.Errorf("--cluster-name: %w", err)
		}
		return c, nil
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace %s, whose UID names the cluster when --cluster-name is not set: %w", IdentityNamespace, err)
	}
	return clusterOf(ns)
}

func clusterOf(ns *corev1.Namespace) (wfapi.Cluster, error) {
	c := wfapi.Cluster(ns.UID)
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("namespace %s's UID cannot name the cluster, set --cluster-name: %w", ns.Name, err)
	}
	return c, nil
}

// Scope is where the cluster's workflows run: its identity (ClusterIdentity)
// and the task queue set, or the cluster's own when taskQueue is empty. It
// asks the API server again until it answers or ctx is done, as a process
// started before its API server is reachable must wait for it.
func Scope(ctx context.Context, cfg *rest.Config, clusterName, taskQueue string) (wfapi.Scope, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return wfapi.Scope{}, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	var cluster wfapi.Cluster
	var last error
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		cluster, last = ClusterIdentity(ctx, cs, clusterName)
		if last != nil && clusterName != "" {
			return false, last // a name that cannot be: no retry helps
		}
		return last == nil, nil
	})
	if err != nil {
		if last != nil {
			return wfapi.Scope{}, fmt.Errorf("naming the cluster: %w", last)
		}
		return wfapi.Scope{}, fmt.Errorf("naming the cluster: %w", err)
	}
	return wfapi.ScopeOf(cluster, taskQueue), nil
}
