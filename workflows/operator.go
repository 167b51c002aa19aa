package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// operatorRequestsPerRun bounds the requests one run of the operator
// workflow carries out before it continues as new (about ten events each),
// besides the server's own suggestion. A variable so a test can make it small.
var operatorRequestsPerRun = 500

// operatorPendingMax bounds the requests waiting at once. Identical
// requests merge while they wait, so it counts distinct ones; a request
// beyond it is rejected, logged and counted, never queued. With each
// request's free text cut to operatorInputKept, it bounds what a run hands
// to the next across continue-as-new: under 1 MB in the worst case (500
// requests of the longest names and notes, every byte escaped), far less
// in practice, where the server refuses 2 MB (and gRPC 4 MB: the task
// fails on every attempt and the queue is stuck). A variable so a test
// can make it small.
var operatorPendingMax = 500

// operatorRecent is how many handled requests the `state` query shows.
const operatorRecent = 20

// operatorInputKept bounds how much of an operator's free text (a rejected
// input, its error, a request's `by` note) the workflow keeps in its state
// and hands on (the whole text is in the signal's history event).
const operatorInputKept = 200

// operatorRecentWorkflows bounds the workflow IDs a handled request's
// record keeps for the `state` query (its activity's result in the
// history lists up to wfapi.MaxRecordedWorkflows).
const operatorRecentWorkflows = 10

// operatorRequestTimeout bounds one attempt of an operator's request: a
// fleet-wide request is paced (activities.DefaultOperatorStartsPerSecond),
// so it may take many minutes; a dead worker is detected by the heartbeat
// timeout, and the retry resumes after the last pool signalled.
const operatorRequestTimeout = time.Hour

// Operator is the signal target an operator always finds: one execution per
// task queue (wfapi.OperatorWorkflowID), kept running by the leading
// starter, idle (no timer, no activity) until signalled. It takes
// `reresolve` naming one pool, a namespace's pools or a class's pools, and
// `recheck` naming a config (formats: wfapi.ParseReresolve, ParseRecheck),
// and turns each into the signal-with-starts the direct CLI forms send, one
// request at a time, paced, in an activity. Its history is the record of
// who asked for what: each signal's input, and each request's activity
// with the workflows it signalled. A bad or unknown input is logged,
// recorded in the `state` query and ignored: it never fails a task. What
// crosses continue-as-new is bounded (operatorPendingMax), and each run
// refreshes its memo (the SDK copies the previous run's).
func Operator(ctx workflow.Context, in wfapi.OperatorInput) error {
	log := workflow.GetLogger(ctx)
	c, err := cluster(ctx)
	if err != nil {
		return err
	}
	recordCluster(ctx, c)
	if workflow.GetInfo(ctx).ContinuedExecutionRunID != "" {
		summary := fmt.Sprintf("%s; continued as new with %d pending of %d received", wfapi.OperatorSummary, len(in.Pending), in.Received)
		if err := workflow.UpsertMemo(ctx, map[string]any{"summary": summary}); err != nil {
			log.Warn("could not record the summary in the memo", "error", err)
		}
	}
	state := wfapi.OperatorState{Received: in.Received, Rejected: in.Rejected, Pending: in.Pending, Recent: in.Recent}
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryState, func() (wfapi.OperatorState, error) {
		return state, nil
	}); err != nil {
		return err
	}
	record := func(r wfapi.OperatorRecord) {
		if r.Result != nil && len(r.Result.Workflows) > operatorRecentWorkflows {
			res := *r.Result
			res.Workflows = res.Workflows[:operatorRecentWorkflows:operatorRecentWorkflows]
			r.Result = &res
		}
		state.Recent = append(state.Recent, r)
		if n := len(state.Recent); n > operatorRecent {
			state.Recent = append([]wfapi.OperatorRecord(nil), state.Recent[n-operatorRecent:]...)
		}
	}
	// running is the request under way (state.Pending[0]), nil when none.
	var running workflow.Future
	reject := func(signal, input string, why string) {
		state.Rejected++
		log.Warn("ignoring an operator request", "seq", state.Received, "signal", signal, "input", wfapi.Truncate(input, operatorInputKept), "error", why)
		record(wfapi.OperatorRecord{Seq: state.Received, Signal: signal, Input: wfapi.Truncate(input, operatorInputKept),
			Rejected: wfapi.Truncate(why, operatorInputKept)})
	}
	// accept parses one signal. Its payload is received raw: decoding it
	// into a type would panic the workflow task on a malformed one.
	accept := func(signal string, raw converter.RawValue) {
		state.Received++
		req, input, err := parseOperatorSignal(signal, raw)
		if err != nil {
			reject(signal, input, err.Error())
			return
		}
		req.Seq = state.Received
		req.By = wfapi.Truncate(req.By, operatorInputKept)
		// An identical request still waiting answers this one too: it
		// looks at the pools after both were asked. Not the one under
		// way, which may have looked already.
		for i := range state.Pending {
			if (i > 0 || running == nil) && state.Pending[i].SameSelection(req) {
				state.Pending[i].Repeats++
				log.Info("operator request merged into an identical one waiting", "request", req.String(), "into", state.Pending[i].Seq, "by", req.By)
				return
			}
		}
		if len(state.Pending) >= operatorPendingMax {
			reject(signal, input, fmt.Sprintf("%d requests wait already: send it again once fewer do (the state query lists them), or name a namespace or a class", len(state.Pending)))
			return
		}
		log.Info("operator request", "request", req.String(), "by", req.By)
		state.Pending = append(state.Pending, req)
	}
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	recheck := workflow.GetSignalChannel(ctx, wfapi.SignalRecheck)
	receiveFrom := func(signal string) func(workflow.ReceiveChannel, bool) {
		return func(c workflow.ReceiveChannel, _ bool) {
			var raw converter.RawValue
			c.Receive(ctx, &raw)
			accept(signal, raw)
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: operatorRequestTimeout,
		HeartbeatTimeout:    activityTimeout,
		RetryPolicy:         retryForever,
	})
	handled := 0
	for {
		if running == nil && (handled >= operatorRequestsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			// Every signal delivered to this run is taken before it ends:
			// one left in a channel would be lost with the run.
			for _, ch := range []struct {
				signal string
				c      workflow.ReceiveChannel
			}{{wfapi.SignalReresolve, reresolve}, {wfapi.SignalRecheck, recheck}} {
				for {
					var raw converter.RawValue
					if !ch.c.ReceiveAsync(&raw) {
						break
					}
					accept(ch.signal, raw)
				}
			}
			return workflow.NewContinueAsNewError(ctx, wfapi.OperatorWorkflow,
				wfapi.OperatorInput{Pending: state.Pending, Received: state.Received, Rejected: state.Rejected, Recent: state.Recent})
		}
		if running == nil && len(state.Pending) > 0 {
			req := state.Pending[0]
			if req.Signal == wfapi.SignalRecheck {
				running = workflow.ExecuteActivity(actx, act.OperatorRecheck, req)
			} else {
				running = workflow.ExecuteActivity(actx, act.OperatorReresolve, req)
			}
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(reresolve, receiveFrom(wfapi.SignalReresolve))
		sel.AddReceive(recheck, receiveFrom(wfapi.SignalRecheck))
		if running != nil {
			sel.AddFuture(running, func(f workflow.Future) {
				req := state.Pending[0]
				state.Pending = state.Pending[1:]
				running = nil
				handled++
				var res wfapi.OperatorResult
				r := wfapi.OperatorRecord{Seq: req.Seq, Signal: req.Signal, Request: &req}
				if err := f.Get(ctx, &res); err != nil {
					// Only an input no retry can carry out ends here.
					log.Warn("operator request failed", "request", req.String(), "error", err)
					r.Rejected = wfapi.Truncate(err.Error(), operatorInputKept)
				} else {
					log.Info("operator request done", "request", req.String(), "matched", res.Matched, "signalled", res.Signalled, "unknown", res.Unknown)
					r.Result = &res
				}
				record(r)
			})
		}
		sel.Select(ctx)
	}
}

// parseOperatorSignal reads a signal's raw payload: JSON (what every CLI
// sends) parsed by wfapi; input is the payload as text for the record.
func parseOperatorSignal(signal string, raw converter.RawValue) (req wfapi.OperatorRequest, input string, err error) {
	var data []byte
	if p := raw.Payload(); p != nil {
		switch enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc {
		case converter.MetadataEncodingJSON:
			data = p.GetData()
		case converter.MetadataEncodingNil:
		default:
			return req, "", fmt.Errorf("the input's encoding is %q, not JSON", enc)
		}
	}
	input = string(data)
	// Decoding JSON into fixed structs is deterministic; workflowcheck
	// flags encoding/json for paths of reflect and the runtime (its panics,
	// the garbage collector) that change no result.
	if signal == wfapi.SignalRecheck {
		req, err = wfapi.ParseRecheck(data) //workflowcheck:ignore
	} else {
		req, err = wfapi.ParseReresolve(data) //workflowcheck:ignore
	}
	return req, input, err
}
