package producttest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// Gate holds the first run of one activity with one argument until the test
// opens it, so a test can act at an exact point of a workflow, for example
// delete a config between a switch's claim and its live read. It is a worker
// interceptor: test code only, nothing in the Product waits for it. The SDK
// runs local activities through the same interceptors, so a Gate holds a
// local activity too (and with it the workflow task it runs in).
type Gate struct {
	interceptor.WorkerInterceptorBase
	activity, arg string // arg is a part of the printed first argument
	after         bool   // hold the run's completion, after its side effect
	lose          bool   // then report a failure instead, its heartbeats dropped
	reached       chan struct{}
	open          chan struct{}
	once          sync.Once
	released      sync.Once
}

// NewGateContaining holds the first run of activity whose printed first
// argument contains part: for inputs that carry values a test cannot know
// in advance, such as a pool's UID.
func NewGateContaining(activity, part string) *Gate {
	return &Gate{activity: activity, arg: part, reached: make(chan struct{}), open: make(chan struct{})}
}

// NewGateAfterContaining holds the completion of the first run of activity
// whose printed first argument contains part, once the activity has done
// its work: the side effect has happened, and the workflow does not know it
// yet.
func NewGateAfterContaining(activity, part string) *Gate {
	g := NewGateContaining(activity, part)
	g.after = true
	return g
}

// NewGateLosingCompletion is NewGateAfterContaining for a run whose
// completion never reaches the server: once opened, the held run reports a
// failure instead of its result, and the heartbeats it recorded were never
// sent, as when the worker dies right after the side effect or the API
// server's response never comes back. The server retries the activity.
func NewGateLosingCompletion(activity, part string) *Gate {
	g := NewGateAfterContaining(activity, part)
	g.lose = true
	return g
}

func (g *Gate) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &gatedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, Gate: g}
}

type gatedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	Gate *Gate
	held bool // this run is the held one (set before it runs)
}

func (a *gatedActivity) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&gatedOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, run: a})
}

// gatedOutbound drops the heartbeats of a held run whose completion is lost.
type gatedOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	run *gatedActivity
}

func (o *gatedOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	if o.run.held && o.run.Gate.lose {
		return
	}
	o.Next.RecordHeartbeat(ctx, details...)
}

func (a *gatedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	g := a.Gate
	if activity.GetInfo(ctx).ActivityType.Name != g.activity || len(in.Args) == 0 || !strings.Contains(fmt.Sprint(in.Args[0]), g.arg) {
		return a.Next.ExecuteActivity(ctx, in)
	}
	first := false
	g.once.Do(func() { first = true })
	a.held = first
	var res any
	var err error
	if g.after {
		res, err = a.Next.ExecuteActivity(ctx, in)
	}
	if first {
		close(g.reached)
		<-g.open
	}
	switch {
	case first && g.lose:
		return nil, fmt.Errorf("the completion of %s is lost (test gate)", g.activity)
	case g.after:
		return res, err
	}
	return a.Next.ExecuteActivity(ctx, in)
}

// WaitReached blocks until the gated activity is running (or, for a Gate
// made by NewGateAfterContaining, has done its work), held at the Gate.
func (g *Gate) WaitReached(t testing.TB) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("activity %s(%s) never ran", g.activity, g.arg)
	}
}

func (g *Gate) Release() { g.released.Do(func() { close(g.open) }) }
