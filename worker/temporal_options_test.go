package worker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"ate.dev/orchestrator/internal/tracing"
)

// TestNoTracingByDefault: tracing off, the worker and the replayer get no
// interceptor (this is not a crashtest build); on, both get the same ones,
// tracing first.
func TestNoTracingByDefault(t *testing.T) {
	require.Empty(t, TemporalWorkerOptions().Interceptors)
	require.Empty(t, ReplayerOptions().Interceptors)

	tr, err := tracing.New(noop.NewTracerProvider())
	require.NoError(t, err)
	w, r := TemporalWorkerOptionsWith(tr), ReplayerOptionsWith(tr)
	require.Len(t, w.Interceptors, len(tr.WorkerInterceptors()))
	require.Len(t, r.Interceptors, len(w.Interceptors))
	for i, want := range tr.WorkerInterceptors() {
		require.Same(t, want, w.Interceptors[i])
		require.Same(t, want, r.Interceptors[i])
	}
}
