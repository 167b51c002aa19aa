package producttest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// Step is a rollout step of n pools (percent false) or n percent, with a
// bake time.
func Step(n int32, percent bool, pause time.Duration) v1alpha1.RolloutStep {
	s := v1alpha1.RolloutStep{}
	if percent {
		s.Percent = &n
	} else {
		s.Pools = &n
	}
	if pause > 0 {
		s.Pause = &metav1.Duration{Duration: pause}
	}
	return s
}

// RolloutConfig is a gvisor class default with a staged rollout.
func RolloutConfig(name string, paused bool, gate *v1alpha1.RolloutGate, steps ...v1alpha1.RolloutStep) *v1alpha1.SandboxConfig {
	c := GVisorConfig(name, true)
	c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: steps, Paused: paused, Gate: gate}
	return c
}

// WaitForRollout polls until the config's status.rollout satisfies cond,
// and returns it.
func (p *Product) WaitForRollout(t testing.TB, config, what string, cond func(*v1alpha1.RolloutStatus) bool) *v1alpha1.RolloutStatus {
	t.Helper()
	var got v1alpha1.SandboxConfig
	Eventually(t, fmt.Sprintf("the rollout of %s: %s", config, what), func() (bool, string) {
		if err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Name: config}, &got); err != nil {
			return false, err.Error()
		}
		if got.Status.Rollout == nil {
			return false, "no status.rollout"
		}
		return cond(got.Status.Rollout), fmt.Sprintf("%+v", *got.Status.Rollout)
	})
	return got.Status.Rollout
}

// SetPaused sets spec.rollout.paused, as `kubectl patch` does.
func SetPaused(t testing.TB, kube client.Client, config string, paused bool) {
	t.Helper()
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: config}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"rollout":{"paused":%t}}}`, paused))
	require.NoError(t, kube.Patch(context.Background(), c, patch))
}

// RequestResume sets the resume annotation of a config to value, as
// `kubectl annotate --overwrite` does.
func RequestResume(t testing.TB, kube client.Client, config, value string) {
	t.Helper()
	Request(t, kube, config, v1alpha1.RolloutResumeAnnotation, value)
}

// Request sets a request annotation of a config (rollout-pause, -promote,
// ...) to value, as `kubectl annotate --overwrite` does.
func Request(t testing.TB, kube client.Client, config, annotation, value string) {
	t.Helper()
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: config}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotation, value))
	require.NoError(t, kube.Patch(context.Background(), c, patch))
}

// SetAvailable plays the Deployment controller, which envtest does not
// run: it sets the pool's Deployment's Available condition, which the pool
// mirrors.
func SetAvailable(t testing.TB, kube client.Client, ns, name string, available bool) {
	t.Helper()
	ctx := context.Background()
	var d appsv1.Deployment
	Eventually(t, fmt.Sprintf("Deployment %s/%s", ns, name), func() (bool, string) {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
		return err == nil, fmt.Sprint(err)
	})
	status, reason := corev1.ConditionTrue, "MinimumReplicasAvailable"
	if !available {
		status, reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
	}
	d.Status.ObservedGeneration = d.Generation
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: status, Reason: reason,
		Message: "set by the test", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	require.NoError(t, kube.Status().Update(ctx, &d))
}

// OnConfig returns the pools of ns whose gvisor class is on config, sorted.
func OnConfig(t testing.TB, kube client.Client, ns, config string) []string {
	t.Helper()
	var list v1alpha1.WorkerPoolList
	require.NoError(t, kube.List(context.Background(), &list, client.InNamespace(ns)))
	var out []string
	for _, wp := range list.Items {
		if st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor); st != nil && st.ConfigRef.NameOf() == config {
			out = append(out, wp.Namespace+"/"+wp.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ConfigEvents returns the events about a SandboxConfig (this incarnation:
// configs are cluster-scoped, and an earlier test's config of the same name
// left its events) as "Type Reason: note".
func (p *Product) ConfigEvents(t testing.TB, config string) []string {
	t.Helper()
	var c v1alpha1.SandboxConfig
	require.NoError(t, p.Env.Kube.Get(context.Background(), client.ObjectKey{Name: config}, &c))
	return events(t, p.Clientset, metav1.NamespaceDefault, "SandboxConfig", config, c.UID)
}

// RolloutPlan queries the rollout workflow of a config for its plan.
func (p *Product) RolloutPlan(t testing.TB, config string) wfapi.RolloutPlan {
	t.Helper()
	v, err := p.TemporalClient().QueryWorkflow(context.Background(), p.Cluster().RolloutWorkflowID(config), "", wfapi.QueryPlan)
	require.NoError(t, err)
	var plan wfapi.RolloutPlan
	require.NoError(t, v.Get(&plan))
	return plan
}

// RequireStays asserts cond holds every time it is polled for the whole of
// d: what a test of "nothing moves while held" needs.
func RequireStays(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		ok, state := cond()
		require.True(t, ok, "%s stopped holding: %s", what, state)
		time.Sleep(50 * time.Millisecond) // the poll interval of an assertion over time
	}
}
