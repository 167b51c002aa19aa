package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/starter"
)

// outageTemporal is the starter's Temporal client through an outage of its
// release signals that lasts `outage` from the first one; it starts no
// switch, so this starter never touches other pools.
type outageTemporal struct {
	tclient.Client
	outage time.Duration

	mu    sync.Mutex
	calls []time.Time
	ended time.Time // when the outage ended; zero before the first call
	// landed is when the first call after the outage was made, set once
	// that call returned without error (so the workflow exists by then).
	landed time.Time
}

func (o *outageTemporal) SignalWithStartWorkflow(ctx context.Context, id, signal string, arg any,
	opts tclient.StartWorkflowOptions, workflow any, args ...any) (tclient.WorkflowRun, error) {
	o.mu.Lock()
	now := time.Now()
	if o.ended.IsZero() {
		o.ended = now.Add(o.outage)
	}
	o.calls = append(o.calls, now)
	down := now.Before(o.ended)
	o.mu.Unlock()
	if down {
		return nil, serviceerror.NewUnavailable("Temporal is down (test outage)")
	}
	run, err := o.Client.SignalWithStartWorkflow(ctx, id, signal, arg, opts, workflow, args...)
	if err == nil {
		o.mu.Lock()
		if o.landed.IsZero() {
			o.landed = now
		}
		o.mu.Unlock()
	}
	return run, err
}

func (o *outageTemporal) ExecuteWorkflow(context.Context, tclient.StartWorkflowOptions, any, ...any) (tclient.WorkflowRun, error) {
	return nil, errors.New("this test's starter starts no switch")
}

// TestAConfigDeletedDuringALongOutageIsSignalledWithinSeconds: the release
// signal of a config deleted while Temporal is unreachable fails again and
// again; once Temporal is back, the signal lands within the starter's
// backoff cap (10 s), not after a wait that doubled through the outage
// (controller-runtime's default limiter would wait 20 s at this point, and
// up to about 17 minutes after a long one).
func TestAConfigDeletedDuringALongOutageIsSignalledWithinSeconds(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	tq := testenv.TaskQueue(t)
	const outage = 25 * time.Second
	tc := &outageTemporal{Client: env.Temporal, outage: outage}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- starter.Run(runCtx, starter.Config{Rest: env.RestConfig, Temporal: tc, TaskQueue: tq, SkipNameValidation: true})
	}()
	name := testenv.UniqueName(t)
	cfg := producttest.GVisorConfig(name, false)
	cfg.Finalizers = []string{v1alpha1.ProtectionFinalizer}
	require.NoError(t, kube.Create(ctx, cfg))
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
		var c v1alpha1.SandboxConfig
		if kube.Get(ctx, client.ObjectKey{Name: name}, &c) == nil && controllerutil.RemoveFinalizer(&c, v1alpha1.ProtectionFinalizer) {
			require.NoError(t, kube.Update(ctx, &c))
		}
		_ = env.Temporal.TerminateWorkflow(ctx, testenv.Current().ClusterName.ReleaseWorkflowID(name), "", "test finished")
	})
	require.NoError(t, kube.Delete(ctx, cfg))

	var landed time.Time
	producttest.EventuallyWithin(t, outage+time.Minute, "the release signal to land", func() (bool, string) {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		if !tc.landed.IsZero() {
			landed = tc.landed
			return true, ""
		}
		return false, fmt.Sprintf("%d signals tried", len(tc.calls))
	})
	tc.mu.Lock()
	ended := tc.ended
	tries := 0 // the calls up to the one that landed
	for _, c := range tc.calls {
		if !c.After(landed) {
			tries++
		}
	}
	tc.mu.Unlock()
	after := landed.Sub(ended)
	require.Greater(t, tries, 5, "the signal was retried through the outage")
	require.LessOrEqual(t, after, 10*time.Second+2*time.Second,
		"signalled %s after the outage ended, after %d tries", after.Round(time.Millisecond), tries)
	_, err := env.Temporal.DescribeWorkflowExecution(ctx, testenv.Current().ClusterName.ReleaseWorkflowID(name), "")
	require.NoError(t, err, "the release workflow runs")
}
