package crashtest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// transition is one write of a class's configRef to a new, non-empty value.
type transition struct {
	From, To string
	RV       uint64
}

func (t transition) String() string {
	if t.From == "" {
		return "->" + t.To
	}
	return t.From + "->" + t.To
}

// poolHistory is the configRef history of one incarnation (UID) of a pool.
type poolHistory struct {
	key string
	// complete: the watch saw the pool created and missed none of its
	// changes, so its configRef writes are all known.
	complete bool
	last     map[v1alpha1.SandboxClass]string
	trans    map[v1alpha1.SandboxClass][]transition
	// deletedRV is the revision the pool was deleted at, or 0.
	deletedRV uint64
}

// fate says how a pool's history ended, for a violation's detail.
func (h *poolHistory) fate() string {
	if h.deletedRV == 0 {
		return "pool present"
	}
	return fmt.Sprintf("pool deleted at revision %d", h.deletedRV)
}

type historyResult struct {
	violations []Violation
	byUID      map[string]*poolHistory
}

type interval struct{ from, to uint64 }

// judgeHistory replays the merged history of pools and configs in revision
// order and checks, at every state:
//   - P1/P3: every config a pool's configRef names exists and carries the
//     protection finalizer, and so does every config a pendingConfigRef
//     names that exists and is not in deletion (see below for claims);
//   - P2: a config loses the finalizer only while in deletion and while no
//     pool's status names it.
//
// It also collects each pool's configRef writes, for the event check (P4).
func judgeHistory(recs []*Record, scope Scope) historyResult {
	res := historyResult{byUID: map[string]*poolHistory{}}
	gaps := map[string][]interval{}
	for _, r := range recs {
		if r.GapFrom > 0 {
			k := gapKey(r)
			gaps[k] = append(gaps[k], interval{r.GapFrom, r.RV})
		}
	}
	// uncertain reports whether an object's state at rv falls where the
	// watch missed changes of it.
	uncertain := func(k string, rv uint64) bool {
		for _, iv := range gaps[k] {
			if rv >= iv.from && rv < iv.to {
				return true
			}
		}
		return false
	}
	reported := map[string]bool{}
	report := func(dedupe string, v Violation) {
		if !reported[dedupe] {
			reported[dedupe] = true
			res.violations = append(res.violations, v)
		}
	}
	pools := map[string]*v1alpha1.WorkerPool{}
	configs := map[string]*v1alpha1.SandboxConfig{}

	for _, r := range recs {
		if p := r.Pool; p != nil {
			key := r.Key()
			if r.Deleted {
				delete(pools, key)
				if h := res.byUID[string(p.UID)]; h != nil {
					h.deletedRV = r.RV
				}
			} else {
				pools[key] = p
			}
			if !scope.pool(p.Namespace) || r.Deleted {
				continue
			}
			for _, cs := range p.Status.SandboxClasses {
				for _, ref := range []struct {
					field string
					r     *v1alpha1.SandboxConfigReference
				}{{"configRef", cs.ConfigRef}, {"pendingConfigRef", cs.PendingConfigRef}} {
					if ref.r == nil || uncertain("config:"+ref.r.Name, r.RV) {
						continue
					}
					name := ref.r.Name
					c := configs[name]
					objs := []string{kindPool + " " + key, kindConfig + " " + name}
					if ref.field == "pendingConfigRef" && (c == nil || c.IsDeleting()) {
						// A claim may name a config that its release let go
						// between the switch's Protect and its Claim: the
						// release's live list, made before the claim, found
						// no user. The switch's live read after the claim
						// sees it gone and rolls back, so no configRef ever
						// names it. What the claim must guarantee is that
						// the finalizer is not removed while it stands (P2,
						// below) and that it does not outlive its switch
						// (settled).
						continue
					}
					switch {
					case c == nil:
						report("P3|"+key+"|"+name, Violation{Property: "P3", Objects: objs, Detail: fmt.Sprintf(
							"at revision %d the status (class %s, %s) names SandboxConfig %q, which does not exist",
							r.RV, cs.Name, ref.field, name)})
					case !c.IsProtected():
						report("P1|"+key+"|"+name, Violation{Property: "P1", Objects: objs, Detail: fmt.Sprintf(
							"at revision %d the status (class %s, %s) names SandboxConfig %q, which lacks the finalizer %s",
							r.RV, cs.Name, ref.field, name, v1alpha1.ProtectionFinalizer)})
					}
				}
			}
			h := res.byUID[string(p.UID)]
			if h == nil {
				h = &poolHistory{key: key, complete: !r.Listed, last: map[v1alpha1.SandboxClass]string{},
					trans: map[v1alpha1.SandboxClass][]transition{}}
				res.byUID[string(p.UID)] = h
			}
			if r.GapFrom > 0 {
				h.complete = false
			}
			for _, cs := range p.Status.SandboxClasses {
				cur := cs.ConfigRef.NameOf()
				if prev := h.last[cs.Name]; cur != prev {
					if cur != "" {
						h.trans[cs.Name] = append(h.trans[cs.Name], transition{From: prev, To: cur, RV: r.RV})
					}
					h.last[cs.Name] = cur
				}
			}
			continue
		}

		name := r.Config.Name
		prev := configs[name]
		if r.Deleted {
			delete(configs, name)
		} else {
			configs[name] = r.Config
		}
		if !scope.config(name) || prev == nil || !prev.IsProtected() || (!r.Deleted && r.Config.IsProtected()) {
			continue
		}
		if r.GapFrom > 0 {
			continue // the finalizer went while the watch was down: when is unknown
		}
		// The finalizer is removed at r.RV.
		if !r.Deleted && !r.Config.IsDeleting() {
			report("P2|notdeleting|"+name, Violation{Property: "P2", Objects: []string{kindConfig + " " + name}, Detail: fmt.Sprintf(
				"at revision %d the finalizer was removed from SandboxConfig %q, which was not in deletion", r.RV, name)})
		}
		for key, p := range pools {
			if uncertain("pool:"+key, r.RV) || !slices.Contains(p.Status.ConfigNames(), name) {
				continue
			}
			report("P2|"+key+"|"+name, Violation{Property: "P2", Objects: []string{kindConfig + " " + name, kindPool + " " + key},
				Detail: fmt.Sprintf("at revision %d the finalizer of SandboxConfig %q was removed while the status of WorkerPool %s (revision %s) named it",
					r.RV, name, key, p.ResourceVersion)})
		}
	}
	return res
}

func gapKey(r *Record) string {
	if r.Pool != nil {
		return "pool:" + r.Key()
	}
	return "config:" + r.Key()
}

// settled lists what still differs from a settled cluster: pools not on
// their resolution (P6), deleting configs no pool names (P5), switches
// still running. Empty means settled.
func (c *Checker) settled(ctx context.Context, scope Scope) ([]Violation, error) {
	var pools v1alpha1.WorkerPoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("listing WorkerPools: %w", err)
	}
	var configs v1alpha1.SandboxConfigList
	if err := c.kube.List(ctx, &configs); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	views := resolve.ConfigsFrom(configs.Items)
	named := map[string]bool{}
	for i := range pools.Items {
		for _, n := range pools.Items[i].Status.ConfigNames() {
			named[n] = true
		}
	}
	var out []Violation
	for i := range pools.Items {
		p := &pools.Items[i]
		if !scope.pool(p.Namespace) {
			continue
		}
		key := p.Namespace + "/" + p.Name
		v, err := c.poolSettled(ctx, p, views)
		if err != nil {
			return nil, err
		}
		if v != "" {
			out = append(out, Violation{Property: "P6", Objects: []string{kindPool + " " + key}, Detail: v})
		}
	}
	for i := range configs.Items {
		cfg := &configs.Items[i]
		if scope.config(cfg.Name) && cfg.IsDeleting() && !named[cfg.Name] {
			out = append(out, Violation{Property: "P5", Objects: []string{kindConfig + " " + cfg.Name},
				Detail: fmt.Sprintf("in deletion since %s, no pool names it, still present with finalizers %v",
					cfg.DeletionTimestamp.Format("15:04:05.000"), cfg.Finalizers)})
		}
	}
	if len(scope.TaskQueues) > 0 && c.temporal != nil {
		for _, tq := range scope.TaskQueues {
			running, err := Executions(ctx, c.temporal, fmt.Sprintf("TaskQueue = %q AND WorkflowType = %q AND ExecutionStatus = 'Running'", tq, wfapi.SwitchWorkflow))
			if err != nil {
				return nil, err
			}
			for _, e := range running {
				pool := keyword(e.SearchAttributes, searchattr.WorkerPool)
				if ns, _, _ := strings.Cut(pool, "/"); scope.pool(ns) {
					out = append(out, Violation{Property: "P6", Objects: []string{"workflow " + e.Execution.WorkflowId},
						Detail: "switch still running"})
				}
			}
		}
	}
	return out, nil
}

// poolSettled says how a pool differs from the resolution of its spec
// against the live configs, or "" when it does not.
func (c *Checker) poolSettled(ctx context.Context, p *v1alpha1.WorkerPool, views []resolve.Config) (string, error) {
	var diffs []string
	if p.Status.ObservedGeneration != p.Generation {
		diffs = append(diffs, fmt.Sprintf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation))
	}
	haveConfig := false
	for _, entry := range p.Spec.SandboxClasses {
		st := p.Status.ClassStatus(entry.Name)
		var cur, pending string
		var cond *metav1.Condition
		if st != nil {
			cur, pending = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf()
			cond = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
		}
		haveConfig = haveConfig || cur != ""
		want := resolve.Class(rollout.KeyOf(p), entry, cur, views)
		wantStatus := metav1.ConditionFalse
		if want.Resolved {
			wantStatus = metav1.ConditionTrue
		}
		switch {
		case cur != want.Target:
			diffs = append(diffs, fmt.Sprintf("class %s: configRef %q, resolution %q (%s)", entry.Name, cur, want.Target, want.Message))
		case pending != "":
			diffs = append(diffs, fmt.Sprintf("class %s: pendingConfigRef %q left", entry.Name, pending))
		case cond == nil:
			diffs = append(diffs, fmt.Sprintf("class %s: no Resolved condition", entry.Name))
		case cond.Status != wantStatus || cond.Reason != want.Reason || cond.Message != want.Message || cond.ObservedGeneration != p.Generation:
			diffs = append(diffs, fmt.Sprintf("class %s: Resolved %s/%s %q at generation %d, resolution %s/%s %q at generation %d",
				entry.Name, cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration, wantStatus, want.Reason, want.Message, p.Generation))
		}
	}
	var d appsv1.Deployment
	err := c.kube.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &d)
	if err == nil && !metav1.IsControlledBy(&d, p) {
		// Left by an earlier pool of the same name (the garbage collector
		// has not removed it yet); this pool has none of its own yet.
		err = apierrors.NewNotFound(appsv1.Resource("deployments"), p.Name)
	}
	switch {
	case apierrors.IsNotFound(err):
		if haveConfig {
			diffs = append(diffs, "no Deployment although the pool has its config")
		}
	case err != nil:
		return "", fmt.Errorf("reading the Deployment of WorkerPool %s/%s: %w", p.Namespace, p.Name, err)
	case d.Spec.Replicas == nil || p.Spec.Replicas == nil || *d.Spec.Replicas != *p.Spec.Replicas:
		diffs = append(diffs, fmt.Sprintf("Deployment replicas %v, pool replicas %v", deref(d.Spec.Replicas), deref(p.Spec.Replicas)))
	case d.Status.Replicas != p.Status.Replicas || d.Status.ReadyReplicas != p.Status.ReadyReplicas:
		// The local cluster runs the Deployment controller: the pool's
		// status mirrors what its pods really are.
		diffs = append(diffs, fmt.Sprintf("status replicas %d (%d ready), the Deployment's %d (%d ready)",
			p.Status.Replicas, p.Status.ReadyReplicas, d.Status.Replicas, d.Status.ReadyReplicas))
	}
	return strings.Join(diffs, "; "), nil
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

var (
	switchedNote = regexp.MustCompile(`^sandbox class "([^"]*)" switched from SandboxConfig "([^"]*)" to "([^"]*)"$`)
	usesNote     = regexp.MustCompile(`^sandbox class "([^"]*)" uses SandboxConfig "([^"]*)"$`)
)

type switchedEvent struct {
	class    v1alpha1.SandboxClass
	from, to string
	event    *eventsv1.Event
}

// judgeEvents checks P4's events: per pool incarnation and class, the
// SandboxConfigSwitched events, in time order, are exactly the configRef
// writes the watch saw (from and to), each once. For a pool whose history
// the watch did not see whole, every write seen must have its event.
func (c *Checker) judgeEvents(ctx context.Context, scope Scope, hist historyResult) ([]Violation, error) {
	nss := scope.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	byUID := map[string][]switchedEvent{}
	var out []Violation
	for _, ns := range nss {
		cont := ""
		for {
			list, err := c.clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				return out, fmt.Errorf("listing events in %q: %w", ns, err)
			}
			for i := range list.Items {
				ev := &list.Items[i]
				if ev.Reason != v1alpha1.EventReasonSandboxConfigSwitched || ev.Regarding.Kind != kindPool || !scope.pool(ev.Namespace) {
					continue
				}
				se := switchedEvent{event: ev}
				if m := switchedNote.FindStringSubmatch(ev.Note); m != nil {
					se.class, se.from, se.to = v1alpha1.SandboxClass(m[1]), m[2], m[3]
				} else if m := usesNote.FindStringSubmatch(ev.Note); m != nil {
					se.class, se.to = v1alpha1.SandboxClass(m[1]), m[2]
				} else {
					out = append(out, Violation{Property: "P4", Objects: []string{kindPool + " " + ev.Namespace + "/" + ev.Regarding.Name, "Event " + ev.Name},
						Detail: fmt.Sprintf("SandboxConfigSwitched event with an unexpected note %q", ev.Note)})
					continue
				}
				byUID[string(ev.Regarding.UID)] = append(byUID[string(ev.Regarding.UID)], se)
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
	}
	// A pool the watch never saw was gone before the checker started; the
	// events of a pool in scope are in scope.
	for uid, h := range hist.byUID {
		if ns, _, _ := strings.Cut(h.key, "/"); !scope.pool(ns) {
			continue
		}
		evs := byUID[uid]
		sort.SliceStable(evs, func(i, j int) bool {
			a, b := evs[i].event, evs[j].event
			if !a.EventTime.Equal(&b.EventTime) {
				return a.EventTime.Before(&b.EventTime)
			}
			return a.Name < b.Name
		})
		classes := map[v1alpha1.SandboxClass]bool{}
		for cl := range h.trans {
			classes[cl] = true
		}
		for _, e := range evs {
			classes[e.class] = true
		}
		for cl := range classes {
			var got []string
			for _, e := range evs {
				if e.class == cl {
					got = append(got, transition{From: e.from, To: e.to}.String())
				}
			}
			var want []string
			for _, t := range h.trans[cl] {
				want = append(want, t.String())
			}
			objs := []string{kindPool + " " + h.key + " (uid " + uid + ")"}
			if h.complete {
				if strings.Join(got, " ") != strings.Join(want, " ") {
					out = append(out, Violation{Property: "P4", Objects: objs, Detail: fmt.Sprintf(
						"class %s: SandboxConfigSwitched events %v, configRef writes %v (%s)", cl, got, want, h.fate())})
				}
			} else if !subsequence(want, got) {
				out = append(out, Violation{Property: "P4", Objects: objs, Detail: fmt.Sprintf(
					"class %s: SandboxConfigSwitched events %v miss configRef writes of %v (history partly unseen; %s)", cl, got, want, h.fate())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func subsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// Workflow task failure causes that are part of normal operation: a signal
// arriving while the workflow completes, a sticky queue reset after a
// worker died.
var benignTaskFailures = map[enumspb.WorkflowTaskFailedCause]bool{
	enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND:       true,
	enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE: true,
}

// sameIDSlack is how far the start of a run may be stamped before the close
// of the previous run under the same workflow ID (see judgeWorkflows).
const sameIDSlack = time.Second

// judgeWorkflows checks the workflows of the scope's task queues: no switch
// or release workflow ended other than completed (or continued as new); no
// workflow task failed; and the switches of each pool, by their start and
// close times, never overlapped (P4).
func (c *Checker) judgeWorkflows(ctx context.Context, scope Scope, rep *Report) ([]Violation, error) {
	if len(scope.TaskQueues) == 0 {
		return nil, nil
	}
	if c.temporal == nil {
		return nil, errNoTemporal
	}
	var out []Violation
	switches := map[string][]*workflowpb.WorkflowExecutionInfo{}
	for _, tq := range scope.TaskQueues {
		execs, err := Executions(ctx, c.temporal, fmt.Sprintf("TaskQueue = %q", tq))
		if err != nil {
			return out, err
		}
		for _, e := range execs {
			typ := e.GetType().GetName()
			pool := keyword(e.SearchAttributes, searchattr.WorkerPool)
			config := keyword(e.SearchAttributes, searchattr.SandboxConfig)
			ns, _, _ := strings.Cut(pool, "/")
			switch typ {
			case wfapi.SwitchWorkflow:
				if !scope.pool(ns) {
					continue
				}
			case wfapi.ReleaseWorkflow:
				if !scope.config(config) {
					continue
				}
			case wfapi.OperatorWorkflow:
				// Operators' signal target, kept running by the starter and
				// ended by the test's cleanup: it acts through switches and
				// releases, which are judged.
				continue
			}
			id := "workflow " + e.Execution.WorkflowId + " run " + e.Execution.RunId
			switch e.Status {
			case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
				enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			default:
				out = append(out, Violation{Property: "P6", Objects: []string{id},
					Detail: fmt.Sprintf("%s ended %s: %s", typ, e.Status, c.closeReason(ctx, e.Execution))})
			}
			switch typ {
			case wfapi.SwitchWorkflow:
				rep.Switches++
				if keyword(e.SearchAttributes, searchattr.Outcome) == wfapi.OutcomeRolledBack {
					rep.RolledBack++
				}
				switches[pool] = append(switches[pool], e)
			case wfapi.ReleaseWorkflow:
				if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED && keyword(e.SearchAttributes, searchattr.Outcome) == wfapi.OutcomeReleased {
					rep.Releases++
				}
			}
			v, err := c.judgeHistoryEvents(ctx, e, id)
			if err != nil {
				return out, err
			}
			out = append(out, v...)
		}
	}
	for pool, execs := range switches {
		sort.Slice(execs, func(i, j int) bool { return execs[i].StartTime.AsTime().Before(execs[j].StartTime.AsTime()) })
		for i := 1; i < len(execs); i++ {
			prev, cur := execs[i-1], execs[i]
			// Runs under one workflow ID (a pool's successive switches) are kept
			// apart by the server itself (the ID's conflict policy refuses a
			// start while a run is open), but their times are taken before
			// the ID is locked: a start queued behind a closing run may be
			// stamped a moment before the close.
			slack := time.Duration(0)
			if prev.Execution.WorkflowId == cur.Execution.WorkflowId {
				slack = sameIDSlack
			}
			if prev.CloseTime == nil || cur.StartTime.AsTime().Add(slack).Before(prev.CloseTime.AsTime()) {
				closed := "still running"
				if prev.CloseTime != nil {
					closed = "closed " + prev.CloseTime.AsTime().Format("15:04:05.000000")
				}
				out = append(out, Violation{Property: "P4", Objects: []string{kindPool + " " + pool,
					"workflow " + prev.Execution.WorkflowId, "workflow " + cur.Execution.WorkflowId},
					Detail: fmt.Sprintf("two switches overlap: %s %s, %s started %s", prev.Execution.WorkflowId, closed,
						cur.Execution.WorkflowId, cur.StartTime.AsTime().Format("15:04:05.000000"))})
			}
		}
	}
	return out, nil
}

// judgeHistoryEvents reads one run's history for failed workflow tasks.
func (c *Checker) judgeHistoryEvents(ctx context.Context, e *workflowpb.WorkflowExecutionInfo, id string) ([]Violation, error) {
	var out []Violation
	it := c.temporal.GetWorkflowHistory(ctx, e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return out, fmt.Errorf("reading the history of %s: %w", id, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			a := ev.GetWorkflowTaskFailedEventAttributes()
			if !benignTaskFailures[a.GetCause()] {
				out = append(out, Violation{Property: "P6", Objects: []string{id}, Detail: fmt.Sprintf(
					"workflow task failed (event %d): %s: %s", ev.GetEventId(), a.GetCause(), a.GetFailure().GetMessage())})
			}
		}
	}
	return out, nil
}

// closeReason is the failure message or termination reason of a run.
func (c *Checker) closeReason(ctx context.Context, ex *commonpb.WorkflowExecution) string {
	it := c.temporal.GetWorkflowHistory(ctx, ex.WorkflowId, ex.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err.Error()
		}
		if a := ev.GetWorkflowExecutionFailedEventAttributes(); a != nil {
			return a.GetFailure().GetMessage()
		}
		if a := ev.GetWorkflowExecutionTerminatedEventAttributes(); a != nil {
			return "terminated: " + a.GetReason()
		}
		if a := ev.GetWorkflowExecutionTimedOutEventAttributes(); a != nil {
			return "timed out"
		}
	}
	return "no close event"
}

// Executions lists every execution matching a visibility query, page by page.
func Executions(ctx context.Context, temporal tclient.Client, query string) ([]*workflowpb.WorkflowExecutionInfo, error) {
	var all []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		resp, err := temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return nil, fmt.Errorf("listing workflows (%s): %w", query, err)
		}
		all = append(all, resp.Executions...)
		if token = resp.NextPageToken; len(token) == 0 {
			return all, nil
		}
	}
}

func keyword(attrs *commonpb.SearchAttributes, name string) string {
	var s string
	if p := attrs.GetIndexedFields()[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}
