package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// gate holds the first run of one activity with one argument until the test
// opens it, so a test can act at an exact point of a workflow, for example
// delete a config between a switch's claim and its live read. It is a worker
// interceptor: test code only, nothing in the product waits for it.
type gate struct {
	interceptor.WorkerInterceptorBase
	activity, arg string
	reached       chan struct{}
	open          chan struct{}
	once          sync.Once
}

func newGate(activity, arg string) *gate {
	return &gate{activity: activity, arg: arg, reached: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &gatedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, gate: g}
}

type gatedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	gate *gate
}

func (a *gatedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	g := a.gate
	if activity.GetInfo(ctx).ActivityType.Name == g.activity && len(in.Args) > 0 && fmt.Sprint(in.Args[0]) == g.arg {
		first := false
		g.once.Do(func() { first = true; close(g.reached) })
		if first {
			<-g.open
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}

// waitReached blocks until the gated activity is running, held at the gate.
func (g *gate) waitReached(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("activity %s(%s) never ran", g.activity, g.arg)
	}
}

func (g *gate) release() { close(g.open) }
