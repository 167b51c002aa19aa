package kube

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// NamingWait is how Scope waits while the identity namespace cannot be read
// (RBAC forbids it, the API server is down): it says why, in the log and
// to the readiness probe, rather than waiting silently.
type NamingWait struct {
	// Log gets the first failed look at once, then one line per LogEvery
	// (default 30 s) while the looks go on failing, and one when the
	// cluster is named after a wait; nil: slog.Default().
	Log      *slog.Logger
	LogEvery time.Duration
	// Report, if set, is told each failed look's error, and nil once the
	// cluster is named (probes.Process.NamingCluster: not ready, and why).
	Report func(error)
	// Interval is the pause between looks; default 2 s.
	Interval time.Duration

	now func() time.Time // tests; default time.Now
}

// lookTimeout bounds one look, so that an API server that accepts the
// connection and never answers is reported as a failed look too.
const lookTimeout = 10 * time.Second

// Scope is where the cluster's workflows run: its identity (ClusterIdentity)
// and the task queue set, or the cluster's own when taskQueue is empty. It
// asks the API server again until it answers or ctx is done, as a process
// started before its API server is reachable must wait for it; w says how
// it reports that wait.
func Scope(ctx context.Context, cfg *rest.Config, clusterName, taskQueue string, w NamingWait) (wfapi.Scope, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return wfapi.Scope{}, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	return scopeOf(ctx, cs, clusterName, taskQueue, w)
}

func scopeOf(ctx context.Context, cs kubernetes.Interface, clusterName, taskQueue string, w NamingWait) (wfapi.Scope, error) {
	w.defaults()
	var cluster wfapi.Cluster
	var last error
	var failed int
	var began, logged time.Time
	err := wait.PollUntilContextCancel(ctx, w.Interval, true, func(ctx context.Context) (bool, error) {
		lctx, cancel := context.WithTimeout(ctx, lookTimeout)
		defer cancel()
		cluster, last = ClusterIdentity(lctx, cs, clusterName)
		if last != nil && clusterName != "" {
			return false, last // a name that cannot be: no retry helps
		}
		if last == nil {
			return true, nil
		}
		now := w.now()
		if failed++; failed == 1 {
			began, logged = now, now
			w.Log.Warn("cannot name the cluster yet; not ready, looking again every "+w.Interval.String(),
				append(hint(last), "namespace", IdentityNamespace, "error", last)...)
		} else if now.Sub(logged) >= w.LogEvery {
			logged = now
			w.Log.Warn("still cannot name the cluster; not ready",
				append(hint(last), "namespace", IdentityNamespace, "waited", now.Sub(began).Round(time.Second).String(),
					"failedLooks", failed, "error", last)...)
		}
		if w.Report != nil {
			w.Report(last)
		}
		return false, nil
	})
	if err != nil {
		if last != nil {
			return wfapi.Scope{}, fmt.Errorf("naming the cluster: %w", last)
		}
		return wfapi.Scope{}, fmt.Errorf("naming the cluster: %w", err)
	}
	if failed > 0 {
		w.Log.Info("named the cluster after waiting", "cluster", cluster,
			"waited", w.now().Sub(began).Round(time.Second).String(), "failedLooks", failed)
	}
	if w.Report != nil {
		w.Report(nil)
	}
	return wfapi.ScopeOf(cluster, taskQueue), nil
}

func (w *NamingWait) defaults() {
	if w.Log == nil {
		w.Log = slog.Default()
	}
	if w.LogEvery <= 0 {
		w.LogEvery = 30 * time.Second
	}
	if w.Interval <= 0 {
		w.Interval = 2 * time.Second
	}
	if w.now == nil {
		w.now = time.Now
	}
}

// hint says what fixes a look the API server refused.
func hint(err error) []any {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return []any{"fix", "grant the process's service account get on namespaces/" + IdentityNamespace + " (install.yaml's and the chart's roles do), or set --cluster-name"}
	}
	return nil
}
