package rbac

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestProductRunsUnderItsRoles runs the product's end-to-end path with the
// worker and the starter authenticated as their ServiceAccounts, each
// electing its leader through its Lease in ate-system: a pool resolves (its
// Deployment applied), follows a new class default (claim, confirm, event)
// and its old config, deleted, is released; a staged rollout halts (its
// status and Warning written). Any request a role refuses
// stalls that path and fails a wait.
func TestProductRunsUnderItsRoles(t *testing.T) {
	installRBAC(t)
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := &producttest.Product{
		Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs,
		WorkerRest: as(workerSA), StarterRest: as(starterSA),
		LeaderElectionNamespace: systemNamespace,
	}
	p.Run(t)
	ctx := context.Background()
	kube := env.Kube
	ns := env.Namespace(t)

	// Both processes hold their Lease: only the leaders reconcile pools
	// and start switches.
	for _, lease := range []string{"ate-orchestrator-worker", "ate-orchestrator-starter"} {
		producttest.Eventually(t, "Lease "+systemNamespace+"/"+lease+" held", func() (bool, string) {
			var l coordinationv1.Lease
			if err := kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: lease}, &l); err != nil {
				return false, err.Error()
			}
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", fmt.Sprintf("holder %v", l.Spec.HolderIdentity)
		})
	}

	first := producttest.GVisorConfig("rbac-first", true)
	require.NoError(t, kube.Create(ctx, first))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	p.WaitForConfig(t, ns, "pool", "rbac-first", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "pool", 0)

	// A newer class default: the starter starts a switch, the worker claims,
	// confirms and records the event.
	p.CreateAfterOthers(t, producttest.GVisorConfig("rbac-second", true))
	p.WaitForConfig(t, ns, "pool", "rbac-second", metav1.ConditionTrue)
	producttest.Eventually(t, "the switch's event", func() (bool, string) {
		events := p.Events(t, ns, "pool")
		return len(events) > 0, fmt.Sprintf("%q", events)
	})

	// The old config, deleted, is released: its finalizer removed.
	require.NoError(t, kube.Delete(ctx, first))
	p.WaitGone(t, first)

	// A staged rollout whose deadline the pool misses (its Deployment never
	// becomes Available here): the worker writes status.rollout and the
	// RolloutHalted Warning on the config, the starter started it.
	p.Stop(t)
	p.RolloutStepDeadline = 2 * time.Second
	p.Start(t)
	p.CreateAfterOthers(t, producttest.RolloutConfig("rbac-third", false, nil, producttest.Step(100, true, 0)))
	p.WaitForConfig(t, ns, "pool", "rbac-third", metav1.ConditionTrue)
	p.WaitForRollout(t, "rbac-third", "halted", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutHalted })
	producttest.Eventually(t, "the rollout's Warning", func() (bool, string) {
		evs := p.ConfigEvents(t, "rbac-third")
		return len(evs) == 1, fmt.Sprintf("%q", evs)
	})
}
