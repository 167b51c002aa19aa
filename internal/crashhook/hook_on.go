//go:build crashtest

package crashhook

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// Interceptors returns the killing interceptor when $ATE_CRASH_AFTER_ACTIVITY is set.
func Interceptors() []interceptor.WorkerInterceptor {
	name := os.Getenv(EnvActivity)
	if name == "" {
		return nil
	}
	return []interceptor.WorkerInterceptor{&killer{activity: name, arg: os.Getenv(EnvArg)}}
}

type killer struct {
	interceptor.WorkerInterceptorBase
	activity, arg string
}

func (k *killer) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &killingActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, k: k}
}

type killingActivity struct {
	interceptor.ActivityInboundInterceptorBase
	k *killer
}

func (a *killingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	if err == nil && activity.GetInfo(ctx).ActivityType.Name == a.k.activity && a.matches(in.Args) {
		fmt.Fprintf(os.Stderr, "crashhook: killing the worker after %s(%v), before its completion is reported\n", a.k.activity, in.Args)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; never report the completion
	}
	return res, err
}

func (a *killingActivity) matches(args []any) bool {
	if a.k.arg == "" {
		return true
	}
	return len(args) > 0 && strings.Contains(fmt.Sprintf("%+v", args[0]), a.k.arg)
}
