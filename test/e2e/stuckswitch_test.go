package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/starter"
)

// startCounting is the product's Temporal client, counting the starter's
// switch starts (refused ones included) and its reresolve signals.
type startCounting struct {
	tclient.Client
	mu      sync.Mutex
	starts  []time.Time
	refused []time.Time
	signals int
}

func (c *startCounting) ExecuteWorkflow(ctx context.Context, opts tclient.StartWorkflowOptions, wf any, args ...any) (tclient.WorkflowRun, error) {
	run, err := c.Client.ExecuteWorkflow(ctx, opts, wf, args...)
	if wf == wfapi.SwitchWorkflow {
		c.mu.Lock()
		c.starts = append(c.starts, time.Now())
		if err != nil {
			c.refused = append(c.refused, time.Now())
		}
		c.mu.Unlock()
	}
	return run, err
}

func (c *startCounting) SignalWorkflow(ctx context.Context, id, runID, name string, arg any) error {
	err := c.Client.SignalWorkflow(ctx, id, runID, name, arg)
	if name == wfapi.SignalReresolve && err == nil {
		c.mu.Lock()
		c.signals++
		c.mu.Unlock()
	}
	return err
}

func (c *startCounting) counts() (starts, refused, signals int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.starts), len(c.refused), c.signals
}

// runCounting runs the product with its starter on a startCounting client
// (the worker needs the SDK's own client).
func runCounting(t *testing.T, interceptors ...interceptor.WorkerInterceptor) (*producttest.Product, *startCounting) {
	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	tc := &startCounting{Client: env.Temporal}
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Interceptors: interceptors, NoStarter: true}).Run(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- starter.Run(ctx, starter.Config{Rest: env.RestConfig, Temporal: tc, TaskQueue: p.TaskQueue, SkipNameValidation: true})
	}()
	// Registered after the Product's cleanup, so run before it: the
	// cluster is emptied with no starter running, as with the Product's.
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	return p, tc
}

// stuckOnProtect moves the pool (on "gvisor-now") to a config whose
// finalizer patch an admission policy refuses, and waits until the pool
// shows the failing step.
func stuckOnProtect(t *testing.T, p *producttest.Product, ns, pool, refusedConfig string) *metav1.Condition {
	t.Helper()
	ctx := context.Background()
	kube := p.Env.Kube
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-now", true)))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(refusedConfig, false)))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, pool, "gvisor-now")))
	p.WaitForConfig(t, ns, pool, "gvisor-now", metav1.ConditionTrue)
	producttest.RefuseProtection(t, kube, refusedConfig)
	producttest.Repin(t, kube, ns, pool, refusedConfig)
	var cond *metav1.Condition
	producttest.Eventually(t, "the failing step on the pool", func() (bool, string) {
		st := p.Get(t, ns, pool).Status.ClassStatus(v1alpha1.SandboxClassGVisor)
		cond = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSwitchStepFailing)
		return cond != nil, fmt.Sprintf("conditions %+v", st.Conditions)
	})
	require.Equal(t, activities.StepProtect, cond.Reason)
	require.Contains(t, cond.Message, producttest.ProtectionRefusal)
	return cond
}

// switchClosed polls until the pool's latest switch run has ended.
func switchClosed(t *testing.T, p *producttest.Product, ns, pool string) {
	t.Helper()
	producttest.Eventually(t, "the pool's switch to end", func() (bool, string) {
		d, err := p.TemporalClient().DescribeWorkflowExecution(context.Background(), testenv.Current().ClusterName.SwitchWorkflowID(ns, pool), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.WorkflowExecutionInfo.Status
		return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})
}

// TestAStuckSwitchYieldsToARepin: a pool pinned to a config whose finalizer
// patch an admission policy refuses shows SwitchStepFailing; re-pinned to a
// valid config, it moves there at once (the starter asks the stuck switch,
// which has not claimed, to re-plan: it yields), never visits the refused
// config, and stays on the valid one once the policy is lifted. Meanwhile
// the starter's refused starts back off instead of one a second.
func TestAStuckSwitchYieldsToARepin(t *testing.T) {
	attempts := &countingProtect{config: "gvisor-refused"}
	p, tc := runCounting(t, attempts)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-valid", false)))
	cond := stuckOnProtect(t, p, ns, "stuck", "gvisor-refused")
	stuckSince := time.Now()
	startsBefore, _, _ := tc.counts()

	// The switch stays stuck: Protect is retried, into its longer backoffs
	// (six local attempts in 6.2 s, then the server's from 0.2 s again: the
	// 12th attempt comes about 12.5 s after the first).
	producttest.Eventually(t, "Protect retried", func() (bool, string) {
		n := attempts.n.Load()
		return n >= 12, fmt.Sprintf("%d attempts", n)
	})
	starts, refused, _ := tc.counts()
	window := time.Since(stuckSince)
	// One a second would be about one per second of the window; the
	// backoff (5 s after the start, then 1, 2, 4, 8 s) allows about 4.
	require.Greater(t, window, 10*time.Second)
	require.LessOrEqual(t, starts-startsBefore, 5, "starts refused while the switch was stuck, in %s: %d (of %d starts)", window.Round(time.Second), refused, starts)
	require.Equal(t, "gvisor-now", producttest.RefName(p.Get(t, ns, "stuck").Status.SandboxClasses[0].ConfigRef))

	repinned := time.Now()
	producttest.Repin(t, kube, ns, "stuck", "gvisor-valid")
	got := p.WaitForConfig(t, ns, "stuck", "gvisor-valid", metav1.ConditionTrue)
	took := time.Since(repinned)
	require.Less(t, took, 20*time.Second, "the re-pin was carried out at once, not once the cause was removed")
	require.Nil(t, meta.FindStatusCondition(got.Status.SandboxClasses[0].Conditions, v1alpha1.ConditionSwitchStepFailing))
	_, _, signals := tc.counts()
	require.Equal(t, 1, signals, "the stuck switch was asked to re-plan once")

	producttest.LiftRefusal(t, kube)
	switchClosed(t, p, ns, "stuck")
	uses := `Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`
	warning := `Warning SwitchStepFailing: sandbox class "gvisor": ` + cond.Message
	moved := `Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-now" to "gvisor-valid"`
	events := p.Events(t, ns, "stuck")
	require.Equal(t, []string{uses, warning, moved}, events)
	for _, ev := range events {
		require.False(t, strings.Contains(ev, `to "gvisor-refused"`), "the pool never visited the refused config: %q", ev)
	}
	require.Equal(t, "gvisor-valid", producttest.RefName(p.Get(t, ns, "stuck").Status.SandboxClasses[0].ConfigRef))
}

// TestASwitchTerminatedBeforeItsClaimIsPlannedAgain: an operator terminates
// a switch held before its claim (its Protect refused by an admission
// policy); once the cause is removed, the pool converges to what its spec
// asks without any other change to the pool (before, the starter waited
// for an unrelated change: nothing it watches changed).
func TestASwitchTerminatedBeforeItsClaimIsPlannedAgain(t *testing.T) {
	p, _ := runCounting(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	cond := stuckOnProtect(t, p, ns, "held", "gvisor-guarded")
	require.NoError(t, p.TemporalClient().TerminateWorkflow(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, "held"), "", "operator: stuck switch"))
	producttest.LiftRefusal(t, p.Env.Kube)
	p.WaitForConfig(t, ns, "held", "gvisor-guarded", metav1.ConditionTrue)
	p.WaitForEvents(t, ns, "held", []string{
		`Normal SandboxConfigSwitched: sandbox class "gvisor" uses SandboxConfig "gvisor-now"`,
		`Warning SwitchStepFailing: sandbox class "gvisor": ` + cond.Message,
		`Normal SandboxConfigSwitched: sandbox class "gvisor" switched from SandboxConfig "gvisor-now" to "gvisor-guarded"`,
	})
}
