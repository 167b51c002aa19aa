package poolkeeper

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestDeploymentFailures: each way a Deployment cannot be kept gives its
// reason and a message in the API server's words, and is a failure to retry,
// but one the pool's spec cannot make: that waits for the spec to change.
func TestDeploymentFailures(t *testing.T) {
	p := pool("a", "")
	owned := func(ref *metav1.OwnerReference) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		if ref != nil {
			d.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return d
	}
	invalid, err := deployment.Build(&v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	require.Nil(t, invalid)
	tests := []struct {
		name        string
		got         kept
		reason, msg string
		terminal    bool
	}{
		{"controlled by another kind", notOwned(p, owned(&metav1.OwnerReference{Kind: "ConfigMap", Name: "other", Controller: ptr(true)})),
			v1alpha1.ReasonDeploymentNotOwned, `Deployment "p" exists and is controlled by ConfigMap "other", not by this WorkerPool: it is not applied over; delete it, or give the pool another name`, false},
		{"controlled by nothing", notOwned(p, owned(&metav1.OwnerReference{Kind: "WorkerPool", Name: "p"})),
			v1alpha1.ReasonDeploymentNotOwned, `Deployment "p" exists and is controlled by nothing, not by this WorkerPool: it is not applied over; delete it, or give the pool another name`, false},
		{"refused by the API server", applyFailed(p, fmt.Errorf("deployment: applying ns/p: %w",
			apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "p", errors.New("exceeded quota: q")))),
			v1alpha1.ReasonDeploymentApplyFailed, `applying Deployment "p": deployments.apps "p" is forbidden: exceeded quota: q`, false},
		{"called invalid by the API server", applyFailed(p, fmt.Errorf("deployment: applying ns/p: %w",
			apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "p", field.ErrorList{
				field.Invalid(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("resources", "requests"), "2", "must be less than or equal to cpu limit of 1")}))),
			v1alpha1.ReasonDeploymentInvalid, `applying Deployment "p": Deployment.apps "p" is invalid: spec.template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1; not retried until the WorkerPool's spec changes`, true},
		{"denied by an admission policy (Invalid, no field)", applyFailed(p, fmt.Errorf("deployment: applying ns/p: %w",
			&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: `deployments.apps "p" is forbidden: ValidatingAdmissionPolicy 'x' with binding 'x' denied request: no`,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "no"}}}}})),
			v1alpha1.ReasonDeploymentApplyFailed, `applying Deployment "p": deployments.apps "p" is forbidden: ValidatingAdmissionPolicy 'x' with binding 'x' denied request: no`, false},
		{"not an API error", applyFailed(p, errors.New("connection refused")),
			v1alpha1.ReasonDeploymentApplyFailed, "connection refused", false},
		{"the pool cannot make a Deployment", applyFailed(p, err),
			v1alpha1.ReasonDeploymentInvalid, "the Deployment cannot be built: deployment: WorkerPool ns/p has no UID", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.got.condition
			require.NotNil(t, c)
			require.Equal(t, v1alpha1.ConditionDeploymentApplied, c.Type)
			require.Equal(t, metav1.ConditionFalse, c.Status)
			require.Equal(t, tc.reason, c.Reason)
			require.Equal(t, tc.msg, c.Message)
			require.Equal(t, p.Generation, c.ObservedGeneration)
			if tc.terminal {
				require.NoError(t, tc.got.failure, "an invalid Deployment is not retried at the same generation")
				p := p.DeepCopy()
				p.Status.Conditions = []metav1.Condition{*c}
				require.Equal(t, c, invalidAtGeneration(p), "remembered for the generation")
				p.Generation++
				require.Nil(t, invalidAtGeneration(p), "a new generation tries again")
			} else {
				require.Error(t, tc.got.failure, "a failure is retried")
			}
			require.Nil(t, tc.got.deployment)
		})
	}
}

// TestDeploymentWarningIsPerAppearance: the same failure since the same
// time is one event; a new message or a new appearance is another.
func TestDeploymentWarningIsPerAppearance(t *testing.T) {
	ref := wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}
	at := func(sec int64, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionDeploymentApplied, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonDeploymentApplyFailed, Message: msg, LastTransitionTime: metav1.NewTime(time.Unix(sec, 0))}
	}
	first := deploymentWarning(ref, at(100, "refused"))
	require.Equal(t, "Warning", first.Type)
	require.Equal(t, v1alpha1.ReasonDeploymentApplyFailed, first.Reason)
	require.Equal(t, "refused", first.Note)
	require.Equal(t, first, deploymentWarning(ref, at(100, "refused")), "the same appearance")
	require.NotEqual(t, first.Key, deploymentWarning(ref, at(100, "quota")).Key, "a changed failure")
	require.NotEqual(t, first.Key, deploymentWarning(ref, at(105, "refused")).Key, "a new appearance")
}
