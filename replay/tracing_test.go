package replay

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	"ate.dev/orchestrator/internal/tracing"
	ateworker "ate.dev/orchestrator/worker"
	"ate.dev/orchestrator/workflows"
)

// TestReplayWithTracing replays every recorded history with tracing on, as
// a worker with OTEL_* set reads them: the tracing interceptors
// (ateworker.ReplayerOptionsWith, the worker's own) change no command, so
// the histories recorded without tracing replay with it. The workflow's
// span carries the attributes of its search attributes, the outcome too.
func TestReplayWithTracing(t *testing.T) {
	// A tracer per fixture: the replayer lets an open run go (ending its
	// span) when it evicts it, which may be during a later replay; that
	// span must not land in a later fixture's exporter.
	newTracer := func(t *testing.T) (*tracetest.InMemoryExporter, *tracing.Tracing) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tr, err := tracing.New(tp)
		require.NoError(t, err)
		return spans, tr
	}
	_, tr := newTracer(t)
	require.Len(t, ateworker.ReplayerOptionsWith(tr).Interceptors, len(ateworker.TemporalWorkerOptionsWith(tr).Interceptors))

	fixtures, err := Fixtures(Dir)
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, fx := range fixtures {
		t.Run(fmt.Sprintf("%s.v%d", fx.Name(), fx.Version), func(t *testing.T) {
			spans, tr := newTracer(t)
			r, err := worker.NewWorkflowReplayerWithOptions(ateworker.ReplayerOptionsWith(tr))
			require.NoError(t, err)
			workflows.RegisterWorkflows(r)
			require.NoError(t, ReplayFixture(r, quiet, fx))

			var run *tracetest.SpanStub
			for _, s := range spans.GetSpans() {
				if s.Name == "RunWorkflow:"+fx.WorkflowType() {
					run = &s
				}
			}
			attrs := map[string]string{}
			if run != nil {
				for _, kv := range run.Attributes {
					attrs[string(kv.Key)] = kv.Value.Emit()
				}
			}
			if !closed(t, fx) {
				// The replayer ends an open run's span when it evicts the
				// run, which may be before or after this look: whether
				// there is a span is a race, but one has no outcome.
				require.Empty(t, attrs[tracing.AttrOutcome], "a workflow still open has no outcome: %v", attrs)
				return
			}
			require.NotNil(t, run, "the workflow's span")
			switch fx.Kind {
			case "switch":
				require.NotEmpty(t, attrs[tracing.AttrPool], "%v", attrs)
			case "release":
				require.NotEmpty(t, attrs[tracing.AttrConfig], "%v", attrs)
			}
			if strings.Contains(fx.Scenario, "confirmed") {
				require.Equal(t, "confirmed", attrs[tracing.AttrOutcome], "%v", attrs)
			}
		})
	}
}

// closed reports whether the fixture's workflow run ended in its history.
func closed(t *testing.T, fx Fixture) bool {
	h, err := ReadHistory(fx.Path)
	require.NoError(t, err)
	switch h.Events[len(h.Events)-1].EventType {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		return true
	}
	return false
}
