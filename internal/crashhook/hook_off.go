//go:build !crashtest

package crashhook

import "go.temporal.io/sdk/interceptor"

// Interceptors returns no interceptor: this is not a crashtest build.
func Interceptors() []interceptor.WorkerInterceptor { return nil }
