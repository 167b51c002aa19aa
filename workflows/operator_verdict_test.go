package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// rawSignal is a signal's payload as the operator workflow receives it.
func rawSignal(t *testing.T, v any) converter.RawValue {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return converter.NewRawValue(p)
}

// underWay stands for the activity of the request under way.
type underWay struct{ workflow.Future }

func TestOperatorAdmit(t *testing.T) {
	defer func(was int) { operatorPendingMax = was }(operatorPendingMax)
	operatorPendingMax = 3
	waiting := func(pools ...string) []wfapi.OperatorRequest {
		var reqs []wfapi.OperatorRequest
		for i, p := range pools {
			reqs = append(reqs, wfapi.OperatorRequest{Seq: i + 1, Signal: wfapi.SignalReresolve, Pool: p})
		}
		return reqs
	}
	long := strings.Repeat("n", 5000)
	tests := []struct {
		name    string
		pending []wfapi.OperatorRequest
		running bool // pending[0] is under way
		signal  string
		payload any
		want    admission // seq, signal and input are the case's
	}{
		{name: "a request, none waiting", signal: wfapi.SignalReresolve, payload: "ns/a",
			want: admission{kind: queued, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/a"}}},
		{name: "a recheck", signal: wfapi.SignalRecheck, payload: "gvisor-default",
			want: admission{kind: queued, req: wfapi.OperatorRequest{Signal: wfapi.SignalRecheck, Config: "gvisor-default"}}},
		{name: "a note cut short", signal: wfapi.SignalReresolve, payload: map[string]string{"pool": "ns/a", "by": long},
			want: admission{kind: queued, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/a", By: wfapi.Truncate(long, operatorInputKept)}}},
		{name: "identical to one waiting", pending: waiting("ns/b", "ns/a"), signal: wfapi.SignalReresolve, payload: "ns/a",
			want: admission{kind: merged, into: 1, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/a"}}},
		{name: "identical to the first waiting, none under way", pending: waiting("ns/a"), signal: wfapi.SignalReresolve, payload: "ns/a",
			want: admission{kind: merged, into: 0, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/a"}}},
		{name: "identical to the one under way: it may have looked already", pending: waiting("ns/a"), running: true,
			signal: wfapi.SignalReresolve, payload: "ns/a",
			want: admission{kind: queued, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/a"}}},
		{name: "the same selection by another signal", pending: waiting("ns/a"), signal: wfapi.SignalRecheck, payload: "ns/a",
			want: admission{kind: rejected, why: `SandboxConfig name "ns/a"`}},
		{name: "beyond a full queue", pending: waiting("ns/a", "ns/b", "ns/c"), signal: wfapi.SignalReresolve, payload: "ns/d",
			want: admission{kind: rejected, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/d"},
				why: "3 requests wait already: send it again once fewer do (the state query lists them), or name a namespace or a class"}},
		{name: "identical to one waiting in a full queue", pending: waiting("ns/a", "ns/b", "ns/c"), running: true,
			signal: wfapi.SignalReresolve, payload: "ns/c",
			want: admission{kind: merged, into: 2, req: wfapi.OperatorRequest{Signal: wfapi.SignalReresolve, Pool: "ns/c"}}},
		{name: "a typo", signal: wfapi.SignalReresolve, payload: map[string]string{"namspace": "ns"},
			want: admission{kind: rejected, why: `unknown field "namspace"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &operatorRun{state: wfapi.OperatorState{Received: 7, Pending: tt.pending}}
			if tt.running {
				r.running = underWay{}
			}
			raw := rawSignal(t, tt.payload)
			got := r.admit(tt.signal, raw)
			require.Equal(t, 8, got.seq, "numbered after the signals received")
			require.Equal(t, tt.signal, got.signal)
			require.Equal(t, string(raw.Payload().GetData()), got.input)
			require.Equal(t, tt.want.kind, got.kind)
			require.Equal(t, tt.want.into, got.into)
			if tt.want.kind == rejected {
				require.Contains(t, got.why, tt.want.why)
				return
			}
			want := tt.want.req
			want.Seq = 8
			require.Equal(t, want, got.req)
			require.Equal(t, wfapi.OperatorState{Received: 7, Pending: tt.pending}, r.state, "admit changes nothing")
		})
	}
}

func TestOperatorRecordOf(t *testing.T) {
	req := wfapi.OperatorRequest{Seq: 3, Signal: wfapi.SignalReresolve, Pool: "ns/a"}
	res := wfapi.OperatorResult{Matched: 1, Signalled: 1, Workflows: []string{"c1/workerpool/ns/a/switch"}}
	require.Equal(t, wfapi.OperatorRecord{Seq: 3, Signal: wfapi.SignalReresolve, Request: &req, Result: &res},
		operatorRecordOf(req, res, nil))
	failed := operatorRecordOf(req, wfapi.OperatorResult{}, errors.New(strings.Repeat("x", 500)))
	require.Equal(t, wfapi.OperatorRecord{Seq: 3, Signal: wfapi.SignalReresolve, Request: &req,
		Rejected: wfapi.Truncate(strings.Repeat("x", 500), operatorInputKept)}, failed)
}

func TestKeepRecent(t *testing.T) {
	ids := make([]string, operatorRecentWorkflows+5)
	for i := range ids {
		ids[i] = fmt.Sprintf("c1/workerpool/ns/p-%d/switch", i)
	}
	many := wfapi.OperatorRecord{Seq: 1, Result: &wfapi.OperatorResult{Signalled: len(ids), Workflows: ids}}
	recent := keepRecent(nil, many)
	require.Equal(t, ids[:operatorRecentWorkflows], recent[0].Result.Workflows, "the first few IDs kept")
	require.Len(t, many.Result.Workflows, len(ids), "the activity's result is not cut")
	require.Equal(t, len(ids), recent[0].Result.Signalled)

	for seq := 2; seq <= operatorRecent+3; seq++ {
		recent = keepRecent(recent, wfapi.OperatorRecord{Seq: seq, Rejected: "bad"})
	}
	require.Len(t, recent, operatorRecent)
	require.Equal(t, 4, recent[0].Seq, "the oldest dropped")
	require.Equal(t, operatorRecent+3, recent[len(recent)-1].Seq)
}
