package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/producttest"
)

// TestForeignDeploymentIsNeverTakenOver: a Deployment of the pool's name
// that another owner controls is reported (the DeploymentApplied condition
// and one Warning, however often the pool is retried) and left as it is;
// once it is deleted, the pool gets its own on the retry's backoff, with no
// change to the pool.
func TestForeignDeploymentIsNeverTakenOver(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}}
	require.NoError(t, kube.Create(ctx, owner))
	foreign := foreignDeployment(ns, "workers", owner)
	require.NoError(t, kube.Create(ctx, foreign))

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "workers", "")))
	p.WaitForConfig(t, ns, "workers", "gvisor-default", metav1.ConditionTrue)
	c := waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionFalse, v1alpha1.ReasonDeploymentNotOwned)
	require.Equal(t, `Deployment "workers" exists and is controlled by ConfigMap "other", not by this WorkerPool: it is not applied over; delete it, or give the pool another name`, c.Message)
	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`
	warning := "Warning DeploymentNotOwned: " + c.Message
	p.WaitForEvents(t, ns, "workers", []string{uses, warning})

	// Retried on its backoff, reported once, never applied over.
	waitForRetries(t, 3)
	require.Equal(t, []string{uses, warning}, p.Events(t, ns, "workers"))
	var d appsv1.Deployment
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(foreign), &d))
	require.Len(t, d.OwnerReferences, 1)
	require.Equal(t, owner.UID, d.OwnerReferences[0].UID, "the foreign owner still controls it")
	require.Equal(t, "foreign:1", d.Spec.Template.Spec.Containers[0].Image)
	for _, m := range d.ManagedFields {
		require.NotEqual(t, deployment.FieldManager, m.Manager, "the product applied over a Deployment it does not own")
	}

	generation := p.Get(t, ns, "workers").Generation
	require.NoError(t, kube.Delete(ctx, &d))
	d2 := p.WaitForDeployment(t, ns, "workers", 0)
	wp := p.Get(t, ns, "workers")
	require.True(t, metav1.IsControlledBy(d2, wp), "the pool's own Deployment")
	c = waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionTrue, v1alpha1.ReasonDeploymentApplied)
	require.Equal(t, `Deployment "workers" is as the pool asks`, c.Message)
	require.Equal(t, generation, p.Get(t, ns, "workers").Generation, "nothing changed the pool")
	require.Equal(t, []string{uses, warning}, p.Events(t, ns, "workers"))
}

// TestRefusedApplyIsRetried: an apply the API server's admission refuses
// (here a ValidatingAdmissionPolicy refusing Deployments with a label the
// pool's template sets) is reported with the API server's words, once, and
// retried on a backoff: once the refusal is lifted, the Deployment is
// applied with no change to the pool and no other signal.
func TestRefusedApplyIsRetried(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	const label = "example.com/refuse"
	lift := refuseLabelledDeployments(t, kube, ns, label)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	wp := producttest.Pool(ns, "workers", "")
	wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{Labels: map[string]v1alpha1.LabelValue{label: "yes"}}
	require.NoError(t, kube.Create(ctx, wp))
	p.WaitForConfig(t, ns, "workers", "gvisor-default", metav1.ConditionTrue)
	c := waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionFalse, v1alpha1.ReasonDeploymentApplyFailed)
	require.True(t, strings.HasPrefix(c.Message, `applying Deployment "workers": `), c.Message)
	require.Contains(t, c.Message, refusalMessage)
	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`
	warning := "Warning DeploymentApplyFailed: " + c.Message
	p.WaitForEvents(t, ns, "workers", []string{uses, warning})

	waitForRetries(t, 3)
	require.Equal(t, []string{uses, warning}, p.Events(t, ns, "workers"))
	p.RequireNoDeployment(t, ns, "workers")

	generation := p.Get(t, ns, "workers").Generation
	lift()
	d := p.WaitForDeployment(t, ns, "workers", 0)
	require.Equal(t, "yes", d.Labels[label])
	waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionTrue, v1alpha1.ReasonDeploymentApplied)
	require.Equal(t, generation, p.Get(t, ns, "workers").Generation, "nothing changed the pool")
	require.Equal(t, []string{uses, warning}, p.Events(t, ns, "workers"))
}

// TestRefusedUpdateIsRetried: a pool whose Deployment exists, and whose
// template edit the API server then refuses, reports the refusal while its
// status keeps following the Deployment it has; the edit lands on the
// backoff once the refusal is lifted.
func TestRefusedUpdateIsRetried(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "workers", "")))
	p.WaitForConfig(t, ns, "workers", "gvisor-default", metav1.ConditionTrue)
	d := p.WaitForDeployment(t, ns, "workers", 0)
	waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionTrue, v1alpha1.ReasonDeploymentApplied)

	const label = "example.com/refuse"
	lift := refuseLabelledDeployments(t, kube, ns, label)
	var wp v1alpha1.WorkerPool
	require.NoError(t, kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "workers"}, &wp))
	base := wp.DeepCopy()
	wp.Spec.Template = &v1alpha1.WorkerPoolPodTemplate{Labels: map[string]v1alpha1.LabelValue{label: "yes"}}
	require.NoError(t, kube.Patch(ctx, &wp, client.MergeFrom(base)))
	c := waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionFalse, v1alpha1.ReasonDeploymentApplyFailed)
	require.Contains(t, c.Message, refusalMessage)

	// The Deployment the pool has is still the one its status mirrors
	// (envtest runs no Deployment controller, so the test plays it).
	require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(d), d))
	d.Status.Replicas, d.Status.ReadyReplicas = 2, 1
	require.NoError(t, kube.Status().Update(ctx, d))
	producttest.Eventually(t, "the pool's status to follow the Deployment it has", func() (bool, string) {
		got := p.Get(t, ns, "workers")
		return got.Status.Replicas == 2 && got.Status.ReadyReplicas == 1, fmt.Sprintf("replicas=%d ready=%d", got.Status.Replicas, got.Status.ReadyReplicas)
	})

	lift()
	producttest.Eventually(t, "the edit to reach the Deployment", func() (bool, string) {
		require.NoError(t, kube.Get(ctx, client.ObjectKeyFromObject(d), d))
		return d.Labels[label] == "yes", fmt.Sprintf("labels %v", d.Labels)
	})
	waitForDeploymentCondition(t, p, ns, "workers", metav1.ConditionTrue, v1alpha1.ReasonDeploymentApplied)
	require.Equal(t, []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-default"`,
		"Warning DeploymentApplyFailed: " + c.Message,
	}, p.Events(t, ns, "workers"))
}

// foreignDeployment is a minimal valid Deployment controlled by owner.
func foreignDeployment(ns, name string, owner *corev1.ConfigMap) *appsv1.Deployment {
	labels := map[string]string{"app": "foreign"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: producttest.Ptr(true),
		}}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "foreign:1"}}},
			},
		},
	}
}

const refusalMessage = "Deployments labelled example.com/refuse are refused in this namespace"

// refuseLabelledDeployments installs a ValidatingAdmissionPolicy that
// refuses Deployments of namespace ns carrying label, waits until the API
// server enforces it, and returns the function that lifts it.
func refuseLabelledDeployments(t *testing.T, kube client.Client, ns, label string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: producttest.Ptr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}},
			},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("!has(object.metadata.labels) || !(%q in object.metadata.labels)", label),
				Message:    refusalMessage,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	require.NoError(t, kube.Create(ctx, policy))
	require.NoError(t, kube.Create(ctx, binding))
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		require.NoError(t, client.IgnoreNotFound(kube.Delete(ctx, binding)))
		require.NoError(t, client.IgnoreNotFound(kube.Delete(ctx, policy)))
	}
	t.Cleanup(lift)

	probe := foreignDeployment(ns, "probe", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "none", UID: "none"}})
	probe.OwnerReferences = nil
	probe.Labels = map[string]string{label: "yes"}
	producttest.Eventually(t, "the admission policy to be enforced", func() (bool, string) {
		err := kube.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), refusalMessage), fmt.Sprintf("dry-run create: %v", err)
	})
	return lift
}

// waitForDeploymentCondition polls until the pool's DeploymentApplied
// condition has status and reason, at the pool's generation.
func waitForDeploymentCondition(t *testing.T, p *producttest.Product, ns, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	producttest.Eventually(t, fmt.Sprintf("WorkerPool %s/%s with DeploymentApplied=%s (%s)", ns, name, status, reason), func() (bool, string) {
		var wp v1alpha1.WorkerPool
		if err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(wp.Status.Conditions, v1alpha1.ConditionDeploymentApplied)
		if c == nil {
			return false, fmt.Sprintf("no condition in %+v", wp.Status.Conditions)
		}
		got = *c
		return c.Status == status && c.Reason == reason && c.ObservedGeneration == wp.Generation, fmt.Sprintf("%+v", *c)
	})
	return got
}

// waitForRetries waits until the pool keeper has failed n more passes
// than when it was called: its failed passes are the backoff's retries.
func waitForRetries(t *testing.T, n float64) {
	t.Helper()
	start := poolKeeperErrors(t)
	producttest.Eventually(t, fmt.Sprintf("%v retries of the pool keeper", n), func() (bool, string) {
		got := poolKeeperErrors(t) - start
		return got >= n, fmt.Sprintf("%v retries", got)
	})
}

// poolKeeperErrors is controller-runtime's count of the pool keeper's
// failed reconciles in this process.
func poolKeeperErrors(t *testing.T) float64 {
	return poolKeeperCounter(t, "controller_runtime_reconcile_errors_total")
}

// poolKeeperCounter is the value of one of controller-runtime's counters
// for the pool keeper's controller in this process.
func poolKeeperCounter(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "pool-keeper" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
