package producttest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// A config whose protection the API server refuses: what a switch step
// does when a write it needs fails for good.

// ProtectionRefusal is the message RefuseProtection's policy refuses with.
const ProtectionRefusal = "protection refused by the test policy"

// RefuseProtection installs a ValidatingAdmissionPolicy that refuses adding
// the protection finalizer to the named config, and waits until the API
// server enforces it (policies load asynchronously).
func RefuseProtection(t *testing.T, kube client.Client, config string) {
	t.Helper()
	ctx := context.Background()
	expr := fmt.Sprintf(`object.metadata.name != %q || !has(object.metadata.finalizers) || !(%q in object.metadata.finalizers)`,
		config, v1alpha1.ProtectionFinalizer)
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-protection"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: Ptr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group},
						APIVersions: []string{v1alpha1.GroupVersion.Version}, Resources: []string{"sandboxconfigs"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: expr, Message: ProtectionRefusal}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-protection"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	require.NoError(t, kube.Create(ctx, policy))
	require.NoError(t, kube.Create(ctx, binding))
	t.Cleanup(func() { LiftRefusal(t, kube) })

	Eventually(t, "the policy to be enforced", func() (bool, string) {
		var c v1alpha1.SandboxConfig
		if err := kube.Get(ctx, client.ObjectKey{Name: config}, &c); err != nil {
			return false, err.Error()
		}
		c.Finalizers = append(c.Finalizers, v1alpha1.ProtectionFinalizer)
		err := kube.Update(ctx, &c, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), ProtectionRefusal), fmt.Sprintf("dry run: %v", err)
	})
}

// LiftRefusal removes RefuseProtection's policy (its cleanup does too).
func LiftRefusal(t *testing.T, kube client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "refuse-protection"}},
		&admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "refuse-protection"}},
	} {
		if err := kube.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("lifting the refusal: deleting %s: %v", obj.GetName(), err)
		}
	}
}
