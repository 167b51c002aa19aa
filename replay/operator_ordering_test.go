package replay

import (
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"

	"ate.dev/orchestrator/internal/wfapi"
)

// operatorSignal is one signal the operator workflow received, as its
// history holds it: the event, the signal's name, and its request as the
// workflow parses it (ok false for an input it rejects).
type operatorSignal struct {
	event  int64
	signal string
	req    wfapi.OperatorRequest
	ok     bool
}

func operatorSignals(h *historypb.History) []operatorSignal {
	var out []operatorSignal
	for _, e := range h.GetEvents() {
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a == nil {
			continue
		}
		var data []byte
		if ps := a.GetInput().GetPayloads(); len(ps) > 0 {
			data = ps[0].GetData()
		}
		s := operatorSignal{event: e.GetEventId(), signal: a.GetSignalName()}
		var err error
		if s.signal == wfapi.SignalRecheck {
			s.req, err = wfapi.ParseRecheck(data)
		} else {
			s.req, err = wfapi.ParseReresolve(data)
		}
		s.ok = err == nil
		out = append(out, s)
	}
	return out
}

// operatorActivities is the activity that carries out each signal's request.
var operatorActivities = map[string]string{wfapi.SignalReresolve: "OperatorReresolve", wfapi.SignalRecheck: "OperatorRecheck"}

// The operator workflow (v1) is an idle loop that turns signals into
// requests: each request is one regular activity (OperatorReresolve for a
// `reresolve`, OperatorRecheck for a `recheck`), one at a time
// (checkOneAtATime), in the order the signals came. A request's input
// names by Seq the signal it answers among those the run received (the
// first run's count starts at 0): that signal came before the activity,
// was valid, and is of the activity's kind; a rejected input starts
// nothing.
func checkOperator(t testing.TB, h *historypb.History) {
	t.Helper()
	var in wfapi.OperatorInput
	startInput(t, h, &in)
	sigs := operatorSignals(h)
	last := in.Received
	for _, c := range activityCalls(t, h) {
		require.False(t, c.Local, "%s (event %d): an operator's request is a regular activity", c.Type, c.Scheduled)
		var req wfapi.OperatorRequest
		decode(t, c.Input, &req)
		require.Greater(t, req.Seq, last, "%s (event %d) answers request %d after request %d: requests run in the order they came", c.Type, c.Scheduled, req.Seq, last)
		last = req.Seq
		i := req.Seq - in.Received - 1
		require.True(t, i >= 0 && i < len(sigs), "%s (event %d) answers request %d, which no signal of this run made", c.Type, c.Scheduled, req.Seq)
		s := sigs[i]
		require.Less(t, s.event, c.Scheduled, "%s (event %d) ran before its signal (event %d)", c.Type, c.Scheduled, s.event)
		require.True(t, s.ok, "%s (event %d) carries out signal %d (event %d), whose input the workflow rejects", c.Type, c.Scheduled, req.Seq, s.event)
		require.Equal(t, operatorActivities[s.signal], c.Type, "the activity of signal %d (%s, event %d)", req.Seq, s.signal, s.event)
		s.req.Seq = req.Seq
		require.True(t, s.req.SameSelection(req), "request %d: the activity's input %+v is not its signal's %+v", req.Seq, req, s.req)
	}
}

// checkOperatorRequests: the recorded operator run got a valid `reresolve`
// of one pool, one it rejects, and a `recheck` of a config; it carried out
// the first and the third, in that order, and was exported while idle.
func checkOperatorRequests(t testing.TB, h *historypb.History) {
	t.Helper()
	require.True(t, isOpen(h), "the operator workflow was exported while it ran")
	require.Equal(t, []string{wfapi.SignalReresolve, wfapi.SignalReresolve, wfapi.SignalRecheck}, signals(h))
	var seqs []int
	for _, c := range activityCalls(t, h) {
		var req wfapi.OperatorRequest
		decode(t, c.Input, &req)
		seqs = append(seqs, req.Seq)
		require.NotZero(t, c.Closed, "%s (event %d) ended before the export", c.Type, c.Scheduled)
	}
	require.Equal(t, []int{1, 3}, seqs, "the requests carried out: the second signal is rejected")
}
