package wfapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"ate.dev/orchestrator/api/v1alpha1"
)

// OperatorWorkflow is the type of the operator workflow: one long-running
// execution per cluster (Cluster.OperatorWorkflowID) that an operator signals (with any CLI, tctl
// included, which cannot signal-with-start) to re-resolve pools or recheck a
// config. It turns each request into the signal-with-starts the starter and
// the direct CLI forms send, paced.
const OperatorWorkflow = "Operator"

// OperatorSummary is the operator workflow's one line in the Web UI's list
// (its memo), set at its start; a continued run adds what it was handed.
const OperatorSummary = "takes operators' reresolve and recheck signals (docs/operating-with-the-cli.md)"

// OperatorInput starts (or continues) the operator workflow.
type OperatorInput struct {
	// Pending are requests received and not yet carried out, carried
	// across continue-as-new so that none is lost.
	Pending []OperatorRequest `json:"pending,omitempty"`
	// Received counts the signals received so far, across runs; each
	// request is numbered by it.
	Received int `json:"received,omitempty"`
	// Rejected counts the signals received and not carried out, across
	// runs: an input it cannot use, or a request beyond a full queue.
	Rejected int `json:"rejected,omitempty"`
	// Recent are the last requests handled, kept for the `state` query.
	Recent []OperatorRecord `json:"recent,omitempty"`
}

// OperatorRequest is one parsed request: re-resolve the pools it selects, or
// recheck a config.
type OperatorRequest struct {
	// Seq numbers the request among the signals the workflow received.
	Seq int `json:"seq"`
	// Signal is SignalReresolve or SignalRecheck.
	Signal string `json:"signal"`
	// Pool, Namespace and Class select pools (reresolve): one pool
	// ("ns/name"), or every pool of a namespace, of a class, or of a class
	// in a namespace.
	Pool      string `json:"pool,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Class     string `json:"class,omitempty"`
	// Config is the config to recheck (recheck).
	Config string `json:"config,omitempty"`
	// By is the operator's free-text note (who, why), recorded as given
	// up to its first 200 bytes (the whole note is in the signal's history
	// event).
	By string `json:"by,omitempty"`
	// Repeats counts the identical requests (same signal, same selection)
	// received while this one waited, carried out with it: one look at
	// the pools after all of them answers each. Their notes are in their
	// signals' history events.
	Repeats int `json:"repeats,omitempty"`
}

// SameSelection reports whether two requests ask for the same thing: the
// same signal, selecting the same pools or config. Their notes and numbers
// may differ.
func (r OperatorRequest) SameSelection(o OperatorRequest) bool {
	return r.Signal == o.Signal && r.Pool == o.Pool && r.Namespace == o.Namespace && r.Class == o.Class && r.Config == o.Config
}

// String is how the request is written in logs and summaries.
func (r OperatorRequest) String() string {
	var sel string
	switch {
	case r.Config != "":
		sel = "config " + r.Config
	case r.Pool != "":
		sel = "pool " + r.Pool
	case r.Namespace != "" && r.Class != "":
		sel = fmt.Sprintf("class %s in namespace %s", r.Class, r.Namespace)
	case r.Namespace != "":
		sel = "namespace " + r.Namespace
	default:
		sel = "class " + r.Class
	}
	return fmt.Sprintf("#%d %s %s", r.Seq, r.Signal, sel)
}

// OperatorResult is what the operator's activity did for one request.
type OperatorResult struct {
	// Matched counts the pools (or configs) the request selected.
	Matched int `json:"matched"`
	// Signalled counts the signal-with-starts sent.
	Signalled int `json:"signalled"`
	// Workflows are the IDs signalled (or started), the first
	// MaxRecordedWorkflows of them: the history's record of what the
	// request did.
	Workflows []string `json:"workflows,omitempty"`
	// Unknown says the request named a pool or config that does not exist.
	Unknown string `json:"unknown,omitempty"`
}

// MaxRecordedWorkflows bounds the IDs an OperatorResult lists, so that a
// fleet-wide request does not make a result too large for the history.
const MaxRecordedWorkflows = 500

// OperatorRecord is one signal as the operator workflow handled it.
type OperatorRecord struct {
	Seq    int    `json:"seq"`
	Signal string `json:"signal"`
	// Input is the signal's payload as received (truncated), for the record.
	Input string `json:"input,omitempty"`
	// Request is the parsed request; nil when it was rejected.
	Request *OperatorRequest `json:"request,omitempty"`
	// Rejected says why the input was ignored.
	Rejected string `json:"rejected,omitempty"`
	// Result is what was done; nil while pending or when rejected.
	Result *OperatorResult `json:"result,omitempty"`
}

// OperatorState is what the operator workflow's `state` query returns.
type OperatorState struct {
	Received int               `json:"received"`
	Rejected int               `json:"rejected,omitempty"`
	Pending  []OperatorRequest `json:"pending,omitempty"`
	Recent   []OperatorRecord  `json:"recent,omitempty"`
}

// reresolveRequest is the object form of a reresolve input.
type reresolveRequest struct {
	Pool      string `json:"pool"`
	Namespace string `json:"namespace"`
	Class     string `json:"class"`
	By        string `json:"by"`
}

// ParseReresolve reads the input of a `reresolve` signal to the operator
// workflow. Accepted, as JSON (what `tctl --input` and `temporal --input`
// take):
//
//	"ns/name"                                one pool
//	"ns/*"                                   every pool of namespace ns
//	{"pool": "ns/name"}                      one pool
//	{"namespace": "ns"}                      every pool of namespace ns
//	{"class": "gvisor"}                      every pool with a gvisor class
//	{"namespace": "ns", "class": "gvisor"}   both
//
// An object may add "by": a free-text note (who asked, why) kept in the
// record. Anything else is an error saying what is wrong. Pure: the
// workflow calls it.
func ParseReresolve(data []byte) (OperatorRequest, error) {
	req := OperatorRequest{Signal: SignalReresolve}
	if s, ok, err := jsonString(data); err != nil {
		return req, err
	} else if ok {
		if ns, found := strings.CutSuffix(s, "/*"); found {
			req.Namespace = ns
		} else {
			req.Pool = s
		}
		return req, req.Validate()
	}
	var obj reresolveRequest
	if err := strictObject(data, &obj); err != nil {
		return req, err
	}
	req.Pool, req.Namespace, req.Class, req.By = obj.Pool, obj.Namespace, obj.Class, obj.By
	if req.Pool != "" && (req.Namespace != "" || req.Class != "") {
		return req, errors.New(`"pool" names one pool: it takes no "namespace" or "class"`)
	}
	return req, req.Validate()
}

// ParseRecheck reads the input of a `recheck` signal to the operator
// workflow: a config's name, as a JSON string ("gvisor-default") or an
// object ({"config": "gvisor-default", "by": "..."}).
func ParseRecheck(data []byte) (OperatorRequest, error) {
	req := OperatorRequest{Signal: SignalRecheck}
	if s, ok, err := jsonString(data); err != nil {
		return req, err
	} else if ok {
		req.Config = s
		return req, req.Validate()
	}
	var obj struct {
		Config string `json:"config"`
		By     string `json:"by"`
	}
	if err := strictObject(data, &obj); err != nil {
		return req, err
	}
	req.Config, req.By = obj.Config, obj.By
	if req.Config == "" {
		return req, errors.New(`name the SandboxConfig to recheck: "name" or {"config": "name"}`)
	}
	return req, req.Validate()
}

// jsonString decodes data when it is a JSON string; ok is false for any
// other JSON value.
func jsonString(data []byte) (s string, ok bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", false, errors.New("no input: name what to look at (see docs/operating-with-the-cli.md)")
	}
	if data[0] != '"' {
		return "", false, nil
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return "", false, fmt.Errorf("input is not valid JSON: %w", err)
	}
	return s, true, nil
}

// strictObject decodes data into a JSON object with no unknown fields, so a
// typo ("namspace") is refused rather than read as "every pool".
func strictObject(data []byte, into any) error {
	if bytes.TrimSpace(data)[0] != '{' {
		return fmt.Errorf("input %s is neither a JSON string nor a JSON object", Truncate(string(data), 80))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("input is not a request: %w", err)
	}
	if dec.More() {
		return errors.New("input holds more than one JSON value")
	}
	return nil
}

// Validate says why r is not a request the operator workflow can carry out:
// what the parsers check, checked again by the activities on a request that
// came in a hand-made workflow input rather than through a parser.
func (r OperatorRequest) Validate() error {
	if r.Signal == SignalReresolve && r.Pool == "" && r.Namespace == "" && r.Class == "" {
		return errors.New(`name what to re-resolve: "ns/name", "ns/*", {"pool": ...}, {"namespace": ...} or {"class": ...}`)
	}
	if r.Pool != "" {
		ns, name, ok := strings.Cut(r.Pool, "/")
		if !ok {
			return fmt.Errorf(`pool %q is not "namespace/name"`, r.Pool)
		}
		if err := namespaceProblem(ns); err != nil {
			return err
		}
		if p := subdomain("WorkerPool", name); p != "" {
			return errors.New(p)
		}
	}
	if r.Namespace != "" {
		if err := namespaceProblem(r.Namespace); err != nil {
			return err
		}
	}
	switch v1alpha1.SandboxClass(r.Class) {
	case "", v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM:
	default:
		return fmt.Errorf("unknown sandbox class %q (want %q or %q)", r.Class, v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM)
	}
	if r.Signal == SignalRecheck {
		if p := subdomain("SandboxConfig", r.Config); p != "" {
			return errors.New(p)
		}
	}
	return nil
}

func namespaceProblem(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace %q is not a DNS label: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// PoolKeys splits a request's Pool into namespace and name.
func (r OperatorRequest) PoolKeys() (namespace, name string) {
	namespace, name, _ = strings.Cut(r.Pool, "/")
	return namespace, name
}

// Truncate shortens s to n bytes, marking the cut: how a record keeps an
// operator's input without letting a large one bloat the history.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
