package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestASwitchWhoseEventHasNoNamespaceEnds: a switch confirms in a namespace
// that is being deleted (every create there is refused, 403
// NamespaceTerminating) or is gone (404): its SandboxConfigSwitched event
// cannot be recorded, and would go with the namespace anyway. The switch
// ends (confirmed, the move stands) instead of retrying the create for
// ever while it holds the pool's switch ID. This environment runs no
// namespace controller, so a deleted namespace stays Terminating, and
// "gone" is a namespace finalized by hand with its objects left in place.
func TestASwitchWhoseEventHasNoNamespaceEnds(t *testing.T) {
	tests := []struct {
		name string
		gone bool
	}{
		{name: "terminating"},
		{name: "gone", gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now, next := "nsgone-now-"+tt.name, "nsgone-next-"+tt.name
			held := producttest.NewGateContaining("Confirm", next)
			p := producttest.Run(t, held)
			t.Cleanup(held.Release)
			ctx := context.Background()
			kube := p.Env.Kube
			ns := p.Env.Namespace(t)
			require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(now, false)))
			require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(next, false)))
			require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "pool", now)))
			p.WaitForConfig(t, ns, "pool", now, metav1.ConditionTrue)
			producttest.Repin(t, kube, ns, "pool", next)
			held.WaitReached(t) // claimed, not confirmed

			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			require.NoError(t, kube.Delete(ctx, namespace))
			if tt.gone {
				require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: ns}, namespace))
				namespace.Spec.Finalizers = nil
				_, err := p.Clientset.CoreV1().Namespaces().Finalize(ctx, namespace, metav1.UpdateOptions{})
				require.NoError(t, err)
				producttest.Eventually(t, "the namespace gone", func() (bool, string) {
					err := kube.Get(ctx, client.ObjectKey{Name: ns}, namespace)
					return apierrors.IsNotFound(err), fmt.Sprintf("phase %s, err %v", namespace.Status.Phase, err)
				})
			}
			held.Release()

			id := testenv.Current().ClusterName.SwitchWorkflowID(ns, "pool")
			producttest.EventuallyWithin(t, 30*time.Second, "the switch to end", func() (bool, string) {
				d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, "")
				if err != nil {
					return false, err.Error()
				}
				info := d.WorkflowExecutionInfo
				return info.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
					fmt.Sprintf("%s, pending %d activities, history of %d events", info.Status, len(d.PendingActivities), info.HistoryLength)
			})
			var res wfapi.SwitchResult
			require.NoError(t, p.TemporalClient().GetWorkflow(ctx, id, "").Get(ctx, &res))
			require.Equal(t, wfapi.OutcomeConfirmed, res.Outcome, "the move stands, only its event had nowhere to go")
			require.Equal(t, next, producttest.RefName(p.Get(t, ns, "pool").Status.SandboxClasses[0].ConfigRef))
		})
	}
}
