package replay

import (
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// TestOrderingCatchesWrongOperators shows the operator checks can fail: the
// recorded operator run with its first signal's input made the rejected
// one's reads as a run that carried out a rejected request; with its first
// signal taken out, as one that ran a request before its signal came; with
// its last taken out, as one that ran a request no signal made. The fixture
// as recorded passes.
func TestOrderingCatchesWrongOperators(t *testing.T) {
	signalEvent := func(t testing.TB, h *historypb.History, n int) []*historypb.HistoryEvent {
		for _, e := range h.GetEvents() {
			if e.GetWorkflowExecutionSignaledEventAttributes() != nil {
				if n == 0 {
					return []*historypb.HistoryEvent{e}
				}
				n--
			}
		}
		t.Fatalf("no signal %d", n)
		return nil
	}
	runGuardCases(t, "operator", []guardCase{
		{"as recorded", "operator-requests", func(testing.TB, *historypb.History) {}, ""},
		{"a request carried out for a rejected input", "operator-requests", func(t testing.TB, h *historypb.History) {
			rejected := signalEvent(t, h, 1)[0].GetWorkflowExecutionSignaledEventAttributes().GetInput()
			signalEvent(t, h, 0)[0].GetWorkflowExecutionSignaledEventAttributes().Input = rejected
		}, "whose input the workflow rejects"},
		{"a request run before its signal", "operator-requests", func(t testing.TB, h *historypb.History) {
			remove(h, signalEvent(t, h, 0))
		}, "ran before its signal"},
		{"a request carried out with no signal", "operator-requests", func(t testing.TB, h *historypb.History) {
			remove(h, signalEvent(t, h, 2))
		}, "which no signal of this run made"},
	})
}

// operatorRequestsFirst runs a request before any signal asked for one.
func operatorRequestsFirst(ctx workflow.Context, _ wfapi.OperatorInput) error {
	return workflow.ExecuteActivity(regular(ctx), "OperatorReresolve", wfapi.OperatorRequest{Signal: wfapi.SignalReresolve}).Get(ctx, nil)
}
