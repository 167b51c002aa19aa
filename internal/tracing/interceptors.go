package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/searchattr"
)

// ClientInterceptors are the Temporal client's: a span per start, signal
// and query, carried to the workflow in its header, with the start's
// search attributes as span attributes. Client interception only: a
// worker built on the client does not inherit them (the SDK would use an
// interceptor that also intercepts workers for them too); the worker's
// come from WorkerInterceptors, through the options the worker and the
// replayer share.
func (t *Tracing) ClientInterceptors() []interceptor.ClientInterceptor {
	if t == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{clientOnly{t.temporal}, &startAttributes{}}
}

// WorkerInterceptors are the worker's and the replayer's: a span per
// workflow run (its parent the start's span), per activity scheduled and
// per activity run, local ones too, with the workflow's search attributes
// (pool, class, from, to, config, outcome) on the workflow's span. Spans
// are not recorded while a workflow replays.
func (t *Tracing) WorkerInterceptors() []interceptor.WorkerInterceptor {
	if t == nil {
		return nil
	}
	return []interceptor.WorkerInterceptor{t.temporal, &workflowAttributes{}}
}

// clientOnly hides the worker half of an interceptor.
type clientOnly struct{ interceptor.ClientInterceptor }

// Attributes are the span attributes of a workflow with these search
// attributes.
func Attributes(sa temporal.SearchAttributes) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, a := range []struct {
		key  temporal.SearchAttributeKeyKeyword
		attr string
	}{
		{searchattr.WorkerPoolKey, AttrPool},
		{searchattr.SandboxClassKey, AttrClass},
		{searchattr.FromConfigKey, AttrFrom},
		{searchattr.ToConfigKey, AttrTo},
		{searchattr.SandboxConfigKey, AttrConfig},
		{searchattr.OutcomeKey, AttrOutcome},
	} {
		if v, ok := sa.GetKeyword(a.key); ok {
			out = append(out, attribute.String(a.attr, v))
		}
	}
	return out
}

// startAttributes puts a start's search attributes on its span (the
// tracing interceptor's, which it runs inside).
type startAttributes struct {
	interceptor.ClientInterceptorBase
}

func (*startAttributes) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &startAttributesOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}}
}

type startAttributesOutbound struct {
	interceptor.ClientOutboundInterceptorBase
}

func (o *startAttributesOutbound) ExecuteWorkflow(ctx context.Context, in *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	annotate(ctx, in.Options)
	return o.Next.ExecuteWorkflow(ctx, in)
}

func (o *startAttributesOutbound) SignalWithStartWorkflow(ctx context.Context, in *interceptor.ClientSignalWithStartWorkflowInput) (client.WorkflowRun, error) {
	annotate(ctx, in.Options)
	return o.Next.SignalWithStartWorkflow(ctx, in)
}

func annotate(ctx context.Context, opts *client.StartWorkflowOptions) {
	if opts == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(Attributes(opts.TypedSearchAttributes)...)
	}
}

// workflowAttributes puts a workflow's search attributes on its span (the
// tracing interceptor's, which it runs inside): those it started with, and
// once it returns those it upserted (its move, when it decided it itself,
// and its outcome). It only reads the workflow's info and writes to the
// span, which is not part of the history: the workflow's commands are the
// same with it or without it.
type workflowAttributes struct {
	interceptor.WorkerInterceptorBase
}

func (*workflowAttributes) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowAttributesInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type workflowAttributesInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *workflowAttributesInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	span, ok := temporalotel.SpanFromWorkflowContext(ctx)
	if ok {
		span.SetAttributes(Attributes(workflow.GetTypedSearchAttributes(ctx))...)
	}
	res, err := i.Next.ExecuteWorkflow(ctx, in)
	if ok {
		span.SetAttributes(Attributes(workflow.GetTypedSearchAttributes(ctx))...)
	}
	return res, err
}
