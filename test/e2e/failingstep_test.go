package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// TestAFailingStepShowsOnThePool: an admission policy refuses the protection
// finalizer on the config a pool must move to. The switch's Protect keeps
// failing and retrying; meanwhile the pool still scales, its class shows a
// SwitchStepFailing condition naming the step and the API server's refusal,
// and exactly one Warning says it however often the step is retried. Once
// the policy is lifted the switch completes and the condition goes.
func TestAFailingStepShowsOnThePool(t *testing.T) {
	attempts := &countingProtect{config: "guarded"}
	p := producttest.Run(t, attempts)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-now", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "held", "")))
	p.WaitForConfig(t, ns, "held", "gvisor-now", metav1.ConditionTrue)
	p.WaitForDeployment(t, ns, "held", 0)

	guarded := producttest.GVisorConfig("guarded", false)
	p.CreateAfterOthers(t, guarded)
	producttest.RefuseProtection(t, kube, "guarded")
	producttest.SetDefault(t, kube, "guarded", true)

	var cond *metav1.Condition
	producttest.Eventually(t, "the failing step on the pool", func() (bool, string) {
		st := p.Get(t, ns, "held").Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		cond = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing)
		return cond != nil, fmt.Sprintf("conditions %+v", st.Conditions)
	})
	require.Equal(t, metav1.ConditionTrue, cond.Status)
	require.Equal(t, activities.StepProtect, cond.Reason)
	require.Contains(t, cond.Message, "Protect keeps failing, retrying with backoff: ")
	require.Contains(t, cond.Message, `SandboxConfig "guarded"`)
	require.Contains(t, cond.Message, "ValidatingAdmissionPolicy")
	require.Contains(t, cond.Message, producttest.ProtectionRefusal)

	// The config side is stuck; the pool's Deployment is not.
	producttest.Scale(t, kube, ns, "held", 3)
	p.WaitForDeployment(t, ns, "held", 3)

	// Retried, not reported again: six local attempts, then the server's,
	// whose 4th (the 10th in all) reports the same condition and Warning.
	producttest.Eventually(t, "Protect retried past its report", func() (bool, string) {
		n := attempts.n.Load()
		return n >= 10, fmt.Sprintf("%d attempts", n)
	})
	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`
	warning := `Warning SwitchStepFailing: sandbox class "gvisor": ` + cond.Message
	require.Equal(t, []string{uses, warning}, p.Events(t, ns, "held"))
	got := p.Get(t, ns, "held")
	require.Equal(t, "gvisor-now", producttest.RefName(got.Status.SandboxClasses[0].ConfigRef))

	producttest.LiftRefusal(t, kube)
	got = p.WaitForConfig(t, ns, "held", "guarded", metav1.ConditionTrue)
	require.Nil(t, meta.FindStatusCondition(got.Status.SandboxClasses[0].Conditions, v1alpha1.ConditionSwitchStepFailing))
	p.WaitForEvents(t, ns, "held", []string{uses, warning,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-now" to "guarded"`})
}

// TestAMoveThatCannotBeMadeIsNotResolved: an unpinned pool's new class
// default is refused its protection finalizer by an admission policy, so
// the pool stays on the old default. Its SandboxConfigResolved condition
// does not say True meanwhile (kubectl wait, Argo CD and Flux read it): it
// is False with SwitchStepFailing, naming the class, the config it keeps
// and the step's error, which names the target. Once the default changes
// back it is True (the class is where its spec puts it); made the default
// again, False again; once the refusal is lifted and the pool has moved,
// True.
func TestAMoveThatCannotBeMadeIsNotResolved(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-now", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "waits", "")))
	p.WaitForConfig(t, ns, "waits", "gvisor-now", metav1.ConditionTrue)

	p.CreateAfterOthers(t, producttest.GVisorConfig("guarded", false))
	producttest.RefuseProtection(t, kube, "guarded")
	producttest.SetDefault(t, kube, "guarded", true)

	var summary *metav1.Condition
	producttest.Eventually(t, "SandboxConfigResolved to say the move fails", func() (bool, string) {
		summary = meta.FindStatusCondition(p.Get(t, ns, "waits").Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
		return summary != nil && summary.Status != metav1.ConditionTrue, fmt.Sprintf("%+v", summary)
	})
	got := p.Get(t, ns, "waits")
	require.Equal(t, metav1.ConditionFalse, summary.Status)
	require.Equal(t, v1alpha1.ReasonSwitchStepFailing, summary.Reason)
	require.Contains(t, summary.Message, `the switch of sandbox class "gvisor" from "gvisor-now" is failing: Protect keeps failing, retrying with backoff: `)
	require.Contains(t, summary.Message, `SandboxConfig "guarded"`)
	require.Contains(t, summary.Message, producttest.ProtectionRefusal)
	require.Equal(t, got.Generation, summary.ObservedGeneration)
	require.Equal(t, "gvisor-now", producttest.RefName(got.Status.SandboxClasses[0].ConfigRef), "the pool keeps its config meanwhile")

	summaryIs := func(want metav1.ConditionStatus, reason string) {
		t.Helper()
		producttest.Eventually(t, fmt.Sprintf("SandboxConfigResolved %s, %s", want, reason), func() (bool, string) {
			s := meta.FindStatusCondition(p.Get(t, ns, "waits").Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
			return s != nil && s.Status == want && s.Reason == reason, fmt.Sprintf("%+v", s)
		})
	}
	producttest.SetDefault(t, kube, "guarded", false)
	summaryIs(metav1.ConditionTrue, v1alpha1.ReasonResolved)
	producttest.SetDefault(t, kube, "guarded", true)
	summaryIs(metav1.ConditionFalse, v1alpha1.ReasonSwitchStepFailing)

	producttest.LiftRefusal(t, kube)
	got = p.WaitForConfig(t, ns, "waits", "guarded", metav1.ConditionTrue)
	summary = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSandboxConfigResolved)
	require.Equal(t, metav1.ConditionTrue, summary.Status)
	require.Equal(t, v1alpha1.ReasonResolved, summary.Reason)
}

// countingProtect counts the attempts of Protect on one config, local ones
// included (the SDK runs local activities through worker interceptors).
type countingProtect struct {
	interceptor.WorkerInterceptorBase
	config string
	n      atomic.Int32
}

func (c *countingProtect) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &countingProtectRun{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, c: c}
}

type countingProtectRun struct {
	interceptor.ActivityInboundInterceptorBase
	c *countingProtect
}

func (r *countingProtectRun) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if activity.GetInfo(ctx).ActivityType.Name == "Protect" && len(in.Args) > 0 &&
		strings.HasPrefix(fmt.Sprint(in.Args[0]), "{"+r.c.config+" ") {
		r.c.n.Add(1)
	}
	return r.Next.ExecuteActivity(ctx, in)
}

// A switch stuck before its claim on a new default that is then withdrawn
// is told to stop: the starter, finding the pool needs no move while the
// switch it knows of works on one, asks it to re-plan, and the switch ends
// without moving the pool. Before, nothing told it: once the refusal was
// lifted it moved the pool to the withdrawn config and a second switch moved
// it back, two SandboxConfigSwitched events for a move nobody wanted.
func TestAWithdrawnMoveIsNotMade(t *testing.T) {
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)

	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-now", true)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "withdrawn", "")))
	p.WaitForConfig(t, ns, "withdrawn", "gvisor-now", metav1.ConditionTrue)

	p.CreateAfterOthers(t, producttest.GVisorConfig("guarded", false))
	producttest.RefuseProtection(t, kube, "guarded")
	producttest.SetDefault(t, kube, "guarded", true)
	producttest.Eventually(t, "the switch to guarded to be failing", func() (bool, string) {
		c := meta.FindStatusCondition(p.Get(t, ns, "withdrawn").Status.SandboxClasses[0].Conditions, v1alpha1.ConditionSwitchStepFailing)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
	})

	producttest.SetDefault(t, kube, "guarded", false)
	id := p.Cluster().SwitchWorkflowID(ns, "withdrawn")
	producttest.Eventually(t, "the withdrawn move's switch to end", func() (bool, string) {
		d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus()
		return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})

	// No switch runs for the pool now: lifting the refusal can move nothing.
	producttest.LiftRefusal(t, kube)
	got := p.WaitForConfig(t, ns, "withdrawn", "gvisor-now", metav1.ConditionTrue)
	require.Nil(t, got.Status.SandboxClasses[0].PendingConfigRef, "no claim is left")
	for _, e := range p.Events(t, ns, "withdrawn") {
		if strings.Contains(e, v1alpha1.EventReasonSandboxConfigSwitched) {
			require.NotContains(t, e, `"guarded"`, "a move to the withdrawn default was made")
		}
	}
}
