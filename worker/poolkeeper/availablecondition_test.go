package poolkeeper

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestAvailableConditionMirrorsTheDeployment(t *testing.T) {
	tests := []struct {
		name       string
		conditions []appsv1.DeploymentCondition
		want       *metav1.Condition
	}{
		{name: "no Deployment controller yet: nothing claimed", conditions: nil, want: nil},
		{
			name: "workers that cannot run",
			conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"},
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			},
			want: &metav1.Condition{
				Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "MinimumReplicasUnavailable",
				Message:            `8 of 10 workers ready; Deployment "p": Deployment does not have minimum availability.`,
				ObservedGeneration: 2,
			},
		},
		{
			name:       "available",
			conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}},
			want: &metav1.Condition{
				Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message:            `8 of 10 workers ready; Deployment "p": Deployment has minimum availability.`,
				ObservedGeneration: 2,
			},
		},
		{
			name:       "no reason given",
			conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionUnknown}},
			want: &metav1.Condition{
				Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonDeploymentAvailable,
				Message:            `8 of 10 workers ready; Deployment "p": `,
				ObservedGeneration: 2,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Status:     appsv1.DeploymentStatus{Replicas: 10, ReadyReplicas: 8, Conditions: tt.conditions},
			}
			require.Equal(t, tt.want, availableCondition(pool("gvisor-a", ""), d))
		})
	}
}
