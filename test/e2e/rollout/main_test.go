// Package rollout runs the staged rollouts end to end, as package e2e runs
// the rest of the product: the worker and the starter against a real
// kube-apiserver+etcd, a real Temporal dev server and a real Prometheus,
// driven only through the Kubernetes API. It is a package of its own, on a
// cluster of its own, so that its tests run beside e2e's rather than after
// them: a package's tests run one after another, since the configs they
// create are cluster-scoped.
package rollout

import (
	"os"
	"testing"

	"ate.dev/orchestrator/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{Prometheus: true})) }
