package activities

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/wfapi"
)

// recordingTemporal records the signal-with-starts it is sent.
type recordingTemporal struct {
	client.Client
	mu   sync.Mutex
	sent []string // "<workflow ID> <signal> <workflow type>"
}

func (r *recordingTemporal) SignalWithStartWorkflow(_ context.Context, id, signal string, _ any, opts client.StartWorkflowOptions, wf any, _ ...any) (client.WorkflowRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, id+" "+signal+" "+wf.(string)+" on "+opts.TaskQueue)
	return nil, nil
}

func operatorPool(ns, name string, classes ...v1alpha1.SandboxClass) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, c := range classes {
		p.Spec.SandboxClasses = append(p.Spec.SandboxClasses, v1alpha1.WorkerPoolSandboxClass{Name: c})
	}
	return p
}

func operatorActivities(t *testing.T) (*Activities, *recordingTemporal) {
	t.Helper()
	micro := v1alpha1.SandboxClassMicroVM
	objs := []ctrlclient.Object{
		operatorPool("ns2", "a", micro),
		operatorPool("ns1", "c", gvisor),
		operatorPool("ns1", "a", gvisor),
		operatorPool("ns1", "b", micro),
		&v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}},
	}
	tc := &recordingTemporal{}
	return &Activities{
		Live:                    fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).Build(),
		Temporal:                tc,
		Scope:                   wfapi.Scope{Cluster: "c1", TaskQueue: "tq"},
		OperatorStartsPerSecond: 1000,
	}, tc
}

func TestOperatorReresolve(t *testing.T) {
	sw := func(key string) string {
		return "c1/workerpool/" + key + "/switch reresolve SandboxConfigSwitch on tq"
	}
	for _, tc := range []struct {
		name   string
		req    wfapi.OperatorRequest
		resume *OperatorProgress
		want   []string
		result wfapi.OperatorResult
	}{
		{name: "one pool", req: wfapi.OperatorRequest{Pool: "ns1/b"},
			want: []string{sw("ns1/b")}, result: wfapi.OperatorResult{Matched: 1, Signalled: 1, Workflows: []string{"c1/workerpool/ns1/b/switch"}}},
		{name: "an unknown pool", req: wfapi.OperatorRequest{Pool: "ns1/nope"},
			result: wfapi.OperatorResult{Unknown: "no WorkerPool ns1/nope"}},
		{name: "a namespace, in key order", req: wfapi.OperatorRequest{Namespace: "ns1"},
			want:   []string{sw("ns1/a"), sw("ns1/b"), sw("ns1/c")},
			result: wfapi.OperatorResult{Matched: 3, Signalled: 3, Workflows: []string{"c1/workerpool/ns1/a/switch", "c1/workerpool/ns1/b/switch", "c1/workerpool/ns1/c/switch"}}},
		{name: "a class", req: wfapi.OperatorRequest{Class: "microvm"},
			want:   []string{sw("ns1/b"), sw("ns2/a")},
			result: wfapi.OperatorResult{Matched: 2, Signalled: 2, Workflows: []string{"c1/workerpool/ns1/b/switch", "c1/workerpool/ns2/a/switch"}}},
		{name: "a class in a namespace", req: wfapi.OperatorRequest{Namespace: "ns1", Class: "gvisor"},
			want:   []string{sw("ns1/a"), sw("ns1/c")},
			result: wfapi.OperatorResult{Matched: 2, Signalled: 2, Workflows: []string{"c1/workerpool/ns1/a/switch", "c1/workerpool/ns1/c/switch"}}},
		{name: "a retried attempt resumes after its last heartbeat", req: wfapi.OperatorRequest{Namespace: "ns1"},
			resume: &OperatorProgress{Last: "ns1/a", Result: wfapi.OperatorResult{Signalled: 1, Workflows: []string{"c1/workerpool/ns1/a/switch"}}},
			want:   []string{sw("ns1/b"), sw("ns1/c")},
			result: wfapi.OperatorResult{Matched: 3, Signalled: 3, Workflows: []string{"c1/workerpool/ns1/a/switch", "c1/workerpool/ns1/b/switch", "c1/workerpool/ns1/c/switch"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, temporal := operatorActivities(t)
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(a)
			if tc.resume != nil {
				env.SetHeartbeatDetails(*tc.resume)
			}
			tc.req.Signal = wfapi.SignalReresolve
			v, err := env.ExecuteActivity(a.OperatorReresolve, tc.req)
			require.NoError(t, err)
			var got wfapi.OperatorResult
			require.NoError(t, v.Get(&got))
			require.Equal(t, tc.result, got)
			require.Equal(t, tc.want, temporal.sent)
		})
	}
}

// TestOperatorRefusesUnparsedRequests: a request that did not come through
// the parser (a hand-made workflow input) is checked again; one selecting
// nothing does not select every pool.
func TestOperatorRefusesUnparsedRequests(t *testing.T) {
	a, tc := operatorActivities(t)
	for _, req := range []wfapi.OperatorRequest{
		{Signal: wfapi.SignalReresolve},
		{Signal: wfapi.SignalReresolve, Namespace: "Bad_NS"},
		{Signal: wfapi.SignalRecheck},
		{Signal: "other", Pool: "ns1/a"},
	} {
		var err error
		if req.Signal == wfapi.SignalRecheck {
			_, err = a.OperatorRecheck(context.Background(), req)
		} else {
			_, err = a.OperatorReresolve(context.Background(), req)
		}
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, "%+v", req)
		require.Equal(t, ErrInvalidInput, app.Type())
	}
	require.Empty(t, tc.sent)
}

func TestOperatorRecheck(t *testing.T) {
	a, temporal := operatorActivities(t)
	got, err := a.OperatorRecheck(context.Background(), wfapi.OperatorRequest{Signal: wfapi.SignalRecheck, Config: "cfg"})
	require.NoError(t, err)
	require.Equal(t, wfapi.OperatorResult{Matched: 1, Signalled: 1, Workflows: []string{"c1/sandboxconfig/cfg/release"}}, got)
	require.Equal(t, []string{"c1/sandboxconfig/cfg/release recheck SandboxConfigRelease on tq"}, temporal.sent)

	got, err = a.OperatorRecheck(context.Background(), wfapi.OperatorRequest{Signal: wfapi.SignalRecheck, Config: "gone"})
	require.NoError(t, err)
	require.Equal(t, wfapi.OperatorResult{Unknown: "no SandboxConfig gone"}, got)
	require.Len(t, temporal.sent, 1, "nothing sent for a config that does not exist")
}
