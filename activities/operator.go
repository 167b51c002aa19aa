package activities

import (
	"context"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// DefaultOperatorStartsPerSecond paces the signal-with-starts of an
// operator's request: a fleet-wide re-resolution of 10,000 pools takes about
// eight minutes and never floods Temporal with more than this many starts a
// second (plus a burst of as many).
const DefaultOperatorStartsPerSecond = 20

// OperatorProgress is an OperatorReresolve attempt's heartbeat: the pools
// it has signalled so far, in key order, so that a retried attempt resumes
// after the last one instead of signalling them all again.
type OperatorProgress struct {
	Last   string               `json:"last"`
	Result wfapi.OperatorResult `json:"result"`
}

// OperatorReresolve carries out an operator's reresolve request: it lists
// the pools the request selects live from the API server, and for each one,
// in key order and paced, sends the signal-with-start of `reresolve` to its
// switch an operator sends from the CLI (wfapi.Reresolve): a running switch
// looks again once it is done, or a new one reads the pool live and makes
// the move it needs, ending "up to date" when there is none. Idempotent
// (another look is harmless) and resumable: it heartbeats the last pool
// signalled, and a retried attempt continues after it.
func (a *Activities) OperatorReresolve(ctx context.Context, req wfapi.OperatorRequest) (wfapi.OperatorResult, error) {
	if req.Signal != wfapi.SignalReresolve {
		return wfapi.OperatorResult{}, invalidInput("OperatorReresolve takes a reresolve request, got %q", req.Signal)
	}
	if err := req.Validate(); err != nil {
		// A request that came in a hand-made workflow input: one with no
		// selection would otherwise select every pool.
		return wfapi.OperatorResult{}, invalidInput("%s: %v", req, err)
	}
	keys, unknown, err := a.selectPools(ctx, req)
	if err != nil {
		return wfapi.OperatorResult{}, err
	}
	p := OperatorProgress{Result: wfapi.OperatorResult{Matched: len(keys), Unknown: unknown}}
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		var last OperatorProgress
		if err := activity.GetHeartbeatDetails(ctx, &last); err == nil {
			p.Last, p.Result.Signalled, p.Result.Workflows = last.Last, last.Result.Signalled, last.Result.Workflows
		}
	}
	limit := a.operatorLimiter()
	payload := fmt.Sprintf("%s request #%d", a.Scope.Cluster.OperatorWorkflowID(), req.Seq)
	for _, key := range keys {
		if key.String() <= p.Last {
			continue
		}
		if err := limit.Wait(ctx); err != nil {
			return wfapi.OperatorResult{}, fmt.Errorf("pacing the re-resolution of %s: %w", key, err)
		}
		if err := wfapi.Reresolve(ctx, a.Temporal, a.Scope, key.Namespace, key.Name, payload); err != nil {
			return wfapi.OperatorResult{}, err
		}
		p.Last = key.String()
		p.Result.Signalled++
		if len(p.Result.Workflows) < wfapi.MaxRecordedWorkflows {
			p.Result.Workflows = append(p.Result.Workflows, a.Scope.Cluster.SwitchWorkflowID(key.Namespace, key.Name))
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, p)
		}
	}
	return p.Result, nil
}

// selectPools lists, live, the pools req selects, sorted by key; for a
// single pool that does not exist, none and a note saying so.
func (a *Activities) selectPools(ctx context.Context, req wfapi.OperatorRequest) ([]types.NamespacedName, string, error) {
	if req.Pool != "" {
		ns, name := req.PoolKeys()
		var pool v1alpha1.WorkerPool
		err := a.Live.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pool)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("no WorkerPool %s", req.Pool), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading WorkerPool %s: %w", req.Pool, err)
		}
		return []types.NamespacedName{{Namespace: ns, Name: name}}, "", nil
	}
	var keys []types.NamespacedName
	opts := []ctrlclient.ListOption{ctrlclient.Limit(livePoolPageSize)}
	if req.Namespace != "" {
		opts = append(opts, ctrlclient.InNamespace(req.Namespace))
	}
	cont := ""
	for pages := 1; ; pages++ {
		var page v1alpha1.WorkerPoolList
		if err := a.Live.List(ctx, &page, append(opts, ctrlclient.Continue(cont))...); err != nil {
			return nil, "", fmt.Errorf("listing WorkerPools for %s (page %d): %w", req, pages, err)
		}
		for i := range page.Items {
			if hasClass(&page.Items[i], req.Class) {
				keys = append(keys, types.NamespacedName{Namespace: page.Items[i].Namespace, Name: page.Items[i].Name})
			}
		}
		if cont = page.Continue; cont == "" {
			break
		}
		if activity.IsActivity(ctx) {
			// Listing a large fleet takes a while: stay alive, keep no progress.
			activity.RecordHeartbeat(ctx)
		}
	}
	slices.SortFunc(keys, func(x, y types.NamespacedName) int {
		switch xs, ys := x.String(), y.String(); {
		case xs < ys:
			return -1
		case xs > ys:
			return 1
		}
		return 0
	})
	return keys, "", nil
}

// hasClass reports whether pool's spec runs class ("" matches any pool).
func hasClass(pool *v1alpha1.WorkerPool, class string) bool {
	if class == "" {
		return true
	}
	for _, c := range pool.Spec.SandboxClasses {
		if string(c.Name) == class {
			return true
		}
	}
	return false
}

// OperatorRecheck carries out an operator's recheck request: the
// signal-with-start of `recheck` to the config's release workflow that the
// starter sends (wfapi.SignalRelease). A config that does not exist is
// reported, not signalled; one not in deletion gets a release run that
// ends "not needed".
func (a *Activities) OperatorRecheck(ctx context.Context, req wfapi.OperatorRequest) (wfapi.OperatorResult, error) {
	if req.Signal != wfapi.SignalRecheck {
		return wfapi.OperatorResult{}, invalidInput("OperatorRecheck takes a recheck request, got %q", req.Signal)
	}
	if err := req.Validate(); err != nil {
		return wfapi.OperatorResult{}, invalidInput("%s: %v", req, err)
	}
	var c v1alpha1.SandboxConfig
	err := a.Live.Get(ctx, types.NamespacedName{Name: req.Config}, &c)
	if apierrors.IsNotFound(err) {
		return wfapi.OperatorResult{Unknown: fmt.Sprintf("no SandboxConfig %s", req.Config)}, nil
	}
	if err != nil {
		return wfapi.OperatorResult{}, fmt.Errorf("reading SandboxConfig %s: %w", req.Config, err)
	}
	if err := a.operatorLimiter().Wait(ctx); err != nil {
		return wfapi.OperatorResult{}, err
	}
	if err := wfapi.SignalRelease(ctx, a.Temporal, a.Scope, req.Config); err != nil {
		return wfapi.OperatorResult{}, err
	}
	return wfapi.OperatorResult{Matched: 1, Signalled: 1, Workflows: []string{a.Scope.Cluster.ReleaseWorkflowID(req.Config)}}, nil
}

// operatorLimiter is the token bucket one request's starts wait on. The
// workflow runs one request at a time, so this bounds the operator's starts.
func (a *Activities) operatorLimiter() *rate.Limiter {
	perSecond := a.OperatorStartsPerSecond
	if perSecond <= 0 {
		perSecond = DefaultOperatorStartsPerSecond
	}
	return rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
}
