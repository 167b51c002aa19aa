package poolkeeper

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// availableCondition is the pool's Available condition, mirrored from its
// Deployment's: readyReplicas below replicas alone does not say whether
// that is a rollout within its budget or workers that cannot run (no node
// of the class has room, an ate.dev/kvm device, or is Ready), and an
// operator reading the pool should not have to find its Deployment to
// tell. nil while the Deployment has no Available condition yet (none
// until the Deployment controller first looked at it), so nothing is
// claimed before anything is known.
func availableCondition(pool *v1alpha1.WorkerPool, d *appsv1.Deployment) *metav1.Condition {
	for _, c := range d.Status.Conditions {
		if c.Type != appsv1.DeploymentAvailable {
			continue
		}
		status := metav1.ConditionUnknown
		switch c.Status {
		case corev1.ConditionTrue:
			status = metav1.ConditionTrue
		case corev1.ConditionFalse:
			status = metav1.ConditionFalse
		}
		reason := c.Reason
		if reason == "" {
			reason = v1alpha1.ReasonDeploymentAvailable
		}
		return &metav1.Condition{
			Type:   v1alpha1.ConditionAvailable,
			Status: status,
			Reason: reason,
			Message: fmt.Sprintf("%d of %d workers ready; Deployment %q: %s",
				d.Status.ReadyReplicas, d.Status.Replicas, d.Name, c.Message),
			ObservedGeneration: pool.Generation,
		}
	}
	return nil
}
