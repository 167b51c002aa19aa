package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/tracing"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestTraceOfASwitch runs a real switch with tracing on (an in-memory
// exporter in place of OTLP) and reads its trace: the starter's start, the
// workflow, each of its steps (scheduled by the workflow, run by the
// worker, local ones too) and the API requests each step makes are one
// trace, each span the child of the one that caused it, and the workflow's
// span says which pool moved from which config to which, and how it ended.
// The same switch shows its user metadata: the summary and details it was
// started with, and its outcome as its current details.
func TestTraceOfASwitch(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr, err := tracing.New(tp)
	require.NoError(t, err)

	env := testenv.Current()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, Tracing: tr}).Run(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	pool := ns + "/counter"
	require.NoError(t, env.Kube.Create(ctx, producttest.GVisorConfig("trace-a", true)))
	require.NoError(t, env.Kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	p.WaitForConfig(t, ns, "counter", "trace-a", metav1.ConditionTrue)
	p.CreateAfterOthers(t, producttest.GVisorConfig("trace-b", true))
	p.WaitForConfig(t, ns, "counter", "trace-b", metav1.ConditionTrue)

	// The workflow's span ends when the switch returns, just after the
	// pool shows its new config.
	var run tracetest.SpanStub
	producttest.Eventually(t, "the span of the switch from trace-a to trace-b, ended with its outcome", func() (bool, string) {
		for _, s := range spans.GetSpans() {
			a := attrs(s.Attributes)
			if s.Name == "RunWorkflow:"+wfapi.SwitchWorkflow && a[tracing.AttrFrom] == "trace-a" && a[tracing.AttrOutcome] != "" {
				run = s
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d spans", len(spans.GetSpans()))
	})
	require.Equal(t, map[string]string{
		tracing.AttrPool: pool, tracing.AttrClass: "gvisor", tracing.AttrFrom: "trace-a", tracing.AttrTo: "trace-b",
		tracing.AttrOutcome: wfapi.OutcomeConfirmed,
	}, pick(attrs(run.Attributes), tracing.AttrPool, tracing.AttrClass, tracing.AttrFrom, tracing.AttrTo, tracing.AttrOutcome, tracing.AttrConfig))

	// Every span of the switch's trace, by name.
	id := run.SpanContext.TraceID()
	trace := map[string][]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID() == id {
			trace[s.Name] = append(trace[s.Name], s)
		}
	}
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		require.Len(t, trace[name], 1, "spans named %s in the trace; it has %v", name, names(trace))
		return trace[name][0]
	}

	t.Logf("the trace: %q", names(trace))
	// The starter's start is the root, and the workflow's parent.
	start := one("StartWorkflow:" + wfapi.SwitchWorkflow)
	require.False(t, start.Parent.IsValid(), "the start is the trace's root")
	require.Equal(t, start.SpanContext.SpanID(), run.Parent.SpanID(), "the workflow's parent is the start")
	require.Equal(t, pool, attrs(start.Attributes)[tracing.AttrPool], "the start's span names the pool")
	require.Equal(t, "trace-b", attrs(start.Attributes)[tracing.AttrTo])

	// Each step: scheduled by the workflow, run by the worker as the
	// child of its scheduling (every step a local activity); each makes
	// its API requests within its span.
	for _, step := range []struct {
		name    string
		request string // a request the step makes, as "METHOD path" (a part of it)
	}{
		{"Protect", "/sandboxconfigs/trace-b"},
		{"Claim", "PUT /apis/ate.dev/v1alpha1/namespaces/" + ns + "/workerpools/counter/status"},
		{"Confirm", "GET /apis/ate.dev/v1alpha1/sandboxconfigs/trace-b"},
		{"Confirm", "PUT /apis/ate.dev/v1alpha1/namespaces/" + ns + "/workerpools/counter/status"},
		{"RecordEvent", "/namespaces/" + ns + "/events"},
	} {
		scheduled := one("StartActivity:" + step.name)
		require.Equal(t, run.SpanContext.SpanID(), scheduled.Parent.SpanID(), "%s is scheduled by the workflow", step.name)
		// One run per attempt: a retried step (a write that met a
		// conflict) has more than one.
		runs := trace["RunActivity:"+step.name]
		require.NotEmpty(t, runs, "%s runs in the trace; it has %v", step.name, names(trace))
		var requests []string
		for _, ran := range runs {
			require.Equal(t, scheduled.SpanContext.SpanID(), ran.Parent.SpanID(), "%s runs as the child of its scheduling", step.name)
			for name, ss := range trace {
				for _, s := range ss {
					if s.Parent.SpanID() == ran.SpanContext.SpanID() {
						requests = append(requests, name)
					}
				}
			}
		}
		require.True(t, containsPart(requests, step.request), "%s's API requests %q include %q", step.name, requests, step.request)
	}

	// The user metadata the Web UI shows: the summary and details given at
	// start, the outcome as the current details.
	d, err := p.TemporalClient().DescribeWorkflowExecution(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, "counter"), "")
	require.NoError(t, err)
	var summary, details string
	md := d.GetExecutionConfig().GetUserMetadata()
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(md.GetSummary(), &summary))
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(md.GetDetails(), &details))
	require.Equal(t, "["+string(p.Cluster())+"] "+pool+`: gvisor "trace-a" → "trace-b"`, summary)
	require.Contains(t, details, `- **from**: "trace-a"`)
	v, err := p.TemporalClient().QueryWorkflow(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, "counter"), "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var meta sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&meta))
	require.Equal(t, "- **outcome**: confirmed\n- **move**: gvisor \"trace-a\" → \"trace-b\"", meta.CurrentDetails)
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// pick keeps the given keys that m has.
func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func names(spans map[string][]tracetest.SpanStub) []string {
	var out []string
	for n := range spans {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func containsPart(names []string, part string) bool {
	for _, n := range names {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}
