package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
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
	op := &operatorRun{log: log, state: wfapi.OperatorState{Received: in.Received, Rejected: in.Rejected, Pending: in.Pending, Recent: in.Recent}}
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryState, func() (wfapi.OperatorState, error) {
		return op.state, nil
	}); err != nil {
		return err
	}
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)
	recheck := workflow.GetSignalChannel(ctx, wfapi.SignalRecheck)
	// A signal's payload is received raw: decoding it into a type would
	// panic the workflow task on a malformed one.
	receiveFrom := func(signal string) func(workflow.ReceiveChannel, bool) {
		return func(c workflow.ReceiveChannel, _ bool) {
			var raw converter.RawValue
			c.Receive(ctx, &raw)
			op.accept(signal, raw)
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: operatorRequestTimeout,
		HeartbeatTimeout:    activityTimeout,
		RetryPolicy:         retryForever,
	})
	for {
		if op.running == nil && (op.handled >= operatorRequestsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
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
					op.accept(ch.signal, raw)
				}
			}
			return workflow.NewContinueAsNewError(ctx, wfapi.OperatorWorkflow,
				wfapi.OperatorInput{Pending: op.state.Pending, Received: op.state.Received, Rejected: op.state.Rejected, Recent: op.state.Recent})
		}
		if op.running == nil && len(op.state.Pending) > 0 {
			req := op.state.Pending[0]
			if req.Signal == wfapi.SignalRecheck {
				op.running = workflow.ExecuteActivity(actx, act.OperatorRecheck, req)
			} else {
				op.running = workflow.ExecuteActivity(actx, act.OperatorReresolve, req)
			}
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(reresolve, receiveFrom(wfapi.SignalReresolve))
		sel.AddReceive(recheck, receiveFrom(wfapi.SignalRecheck))
		if op.running != nil {
			sel.AddFuture(op.running, func(f workflow.Future) {
				op.done(ctx, f)
			})
		}
		sel.Select(ctx)
	}
}

// operatorRun is one run of the operator workflow: the state its `state`
// query shows and continue-as-new hands on, the request under way and how
// many it handled. What to do with a signal (admit) and what a request's
// end leaves on record (operatorRecordOf) are typed verdicts, decided
// apart from the state they change; accept and done apply them.
type operatorRun struct {
	log   log.Logger
	state wfapi.OperatorState
	// running is the request under way (state.Pending[0]), nil when none.
	running workflow.Future
	handled int
}

// admission is the operator workflow's verdict on one signal.
type admission struct {
	// seq numbers the signal among those received, across runs.
	seq    int
	signal string
	// input is the payload as text, for the record of a rejection.
	input string
	kind  admissionKind
	// req is the request parsed, numbered (queued, merged).
	req wfapi.OperatorRequest
	// into is the index in state.Pending of the identical request waiting
	// that answers this one too (merged).
	into int
	// why the input is not carried out (rejected).
	why string
}

type admissionKind int

const (
	queued   admissionKind = iota // waits its turn at the end of the queue
	merged                        // an identical request waiting answers it
	rejected                      // not carried out: a bad input, or a full queue
)

// admit decides what a signal is: a request queued, one merged into an
// identical one waiting, or rejected. It changes nothing.
func (r *operatorRun) admit(signal string, raw converter.RawValue) admission {
	a := admission{seq: r.state.Received + 1, signal: signal}
	req, input, err := parseOperatorSignal(signal, raw)
	a.input = input
	if err != nil {
		a.kind, a.why = rejected, err.Error()
		return a
	}
	req.Seq = a.seq
	req.By = wfapi.Truncate(req.By, operatorInputKept)
	a.req = req
	// An identical request still waiting answers this one too: it looks
	// at the pools after both were asked. Not the one under way, which may
	// have looked already.
	for i := range r.state.Pending {
		if (i > 0 || r.running == nil) && r.state.Pending[i].SameSelection(req) {
			a.kind, a.into = merged, i
			return a
		}
	}
	if len(r.state.Pending) >= operatorPendingMax {
		a.kind, a.why = rejected, fmt.Sprintf("%d requests wait already: send it again once fewer do (the state query lists them), or name a namespace or a class", len(r.state.Pending))
		return a
	}
	a.kind = queued
	return a
}

// accept takes one signal: it counts it, and queues, merges or rejects
// it as admit decides.
func (r *operatorRun) accept(signal string, raw converter.RawValue) {
	a := r.admit(signal, raw)
	r.state.Received = a.seq
	switch a.kind {
	case rejected:
		r.state.Rejected++
		r.log.Warn("ignoring an operator request", "seq", a.seq, "signal", a.signal, "input", wfapi.Truncate(a.input, operatorInputKept), "error", a.why)
		r.state.Recent = keepRecent(r.state.Recent, wfapi.OperatorRecord{Seq: a.seq, Signal: a.signal, Input: wfapi.Truncate(a.input, operatorInputKept),
			Rejected: wfapi.Truncate(a.why, operatorInputKept)})
	case merged:
		r.state.Pending[a.into].Repeats++
		r.log.Info("operator request merged into an identical one waiting", "request", a.req.String(), "into", r.state.Pending[a.into].Seq, "by", a.req.By)
	case queued:
		r.log.Info("operator request", "request", a.req.String(), "by", a.req.By)
		r.state.Pending = append(r.state.Pending, a.req)
	}
}

// done ends the request under way, its activity f ended, and records it.
func (r *operatorRun) done(ctx workflow.Context, f workflow.Future) {
	req := r.state.Pending[0]
	r.state.Pending = r.state.Pending[1:]
	r.running = nil
	r.handled++
	var res wfapi.OperatorResult
	err := f.Get(ctx, &res)
	if err != nil {
		// Only an input no retry can carry out ends here.
		r.log.Warn("operator request failed", "request", req.String(), "error", err)
	} else {
		r.log.Info("operator request done", "request", req.String(), "matched", res.Matched, "signalled", res.Signalled, "unknown", res.Unknown)
	}
	r.state.Recent = keepRecent(r.state.Recent, operatorRecordOf(req, res, err))
}

// operatorRecordOf is the record of a request its activity ended with res
// or err.
func operatorRecordOf(req wfapi.OperatorRequest, res wfapi.OperatorResult, err error) wfapi.OperatorRecord {
	r := wfapi.OperatorRecord{Seq: req.Seq, Signal: req.Signal, Request: &req}
	if err != nil {
		r.Rejected = wfapi.Truncate(err.Error(), operatorInputKept)
	} else {
		r.Result = &res
	}
	return r
}

// keepRecent adds r to the records the `state` query shows, keeping the
// last operatorRecent of them, each with at most operatorRecentWorkflows
// workflow IDs.
func keepRecent(recent []wfapi.OperatorRecord, r wfapi.OperatorRecord) []wfapi.OperatorRecord {
	if r.Result != nil && len(r.Result.Workflows) > operatorRecentWorkflows {
		res := *r.Result
		res.Workflows = res.Workflows[:operatorRecentWorkflows:operatorRecentWorkflows]
		r.Result = &res
	}
	recent = append(recent, r)
	if n := len(recent); n > operatorRecent {
		recent = append([]wfapi.OperatorRecord(nil), recent[n-operatorRecent:]...)
	}
	return recent
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
