package workflows

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
)

// Pool keeps one WorkerPool on the config its spec resolves to, for the
// pool's whole life. It is the only writer of the pool's
// status.sandboxClasses, so the pool's switches run one at a time by
// construction. Each wake-up (a `reresolve` signal from the starter or an
// operator) is one pass; pending wake-ups are drained first, so a storm of
// signals costs one pass. It ends when the pool is gone.
func Pool(ctx workflow.Context, in wfapi.PoolInput) error {
	if in.Namespace == "" || in.Name == "" {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("a pool workflow needs the pool's namespace and name, got %q/%q", in.Namespace, in.Name),
			activities.ErrInvalidInput, nil)
	}
	state := in.State
	if state == nil {
		state = &wfapi.PoolState{}
	}
	log := workflow.GetLogger(ctx)
	if err := workflow.SetQueryHandler(ctx, wfapi.QueryState, func() (wfapi.PoolState, error) {
		return *state, nil
	}); err != nil {
		return err
	}
	reresolve := workflow.GetSignalChannel(ctx, wfapi.SignalReresolve)

	// A start or a continue-as-new is itself a wake-up: pass at once.
	for {
		drain(reresolve)
		if retired(ctx) {
			log.Info("pool workflows are retired: the starter starts each switch itself; ending", "pool", wfapi.PoolKey(in.Namespace, in.Name))
			return nil
		}
		gone, err := pass(ctx, in, state)
		if err != nil {
			// Activities retry until they succeed or hit an error no retry
			// fixes. Keep the workflow alive: the next wake-up tries again.
			log.Error("pool pass failed; waiting for the next wake-up", "pool", wfapi.PoolKey(in.Namespace, in.Name), "error", err)
		}
		if gone && drain(reresolve) == 0 {
			log.Info("pool is gone; ending", "pool", wfapi.PoolKey(in.Namespace, in.Name))
			return nil
		}
		if gone {
			continue // woken while ending: the pool may be back
		}
		if shouldContinueAsNew(ctx) {
			drain(reresolve) // the next run passes at once anyway
			return workflow.NewContinueAsNewError(ctx, wfapi.PoolWorkflow,
				wfapi.PoolInput{Namespace: in.Namespace, Name: in.Name, State: state})
		}
		reresolve.Receive(ctx, nil)
	}
}

// retired reports whether this wake-up of a pool workflow runs on code that
// has the lean switch, where the starter starts each switch and a pool has
// no workflow of its own: the workflow then ends. Wake-ups recorded before
// replay as they ran.
func retired(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "retired-by-lean-switch", workflow.DefaultVersion, 1) == 1
}

// pass resolves the pool once, switches the classes that must move, and
// writes what changed. It reports whether the pool is gone.
func pass(ctx workflow.Context, in wfapi.PoolInput, state *wfapi.PoolState) (gone bool, err error) {
	state.Passes++
	var obs activities.Observation
	ref := activities.PoolRef{Namespace: in.Namespace, Name: in.Name}
	if err := workflow.ExecuteLocalActivity(withLocalActivities(ctx), act.Observe, ref).Get(ctx, &obs); err != nil {
		return false, err
	}
	if !obs.Exists {
		return true, nil
	}
	if state.UID != obs.UID {
		// A new incarnation of the pool (or the first pass): forget what
		// was learnt about the old one, but keep counting switches so the
		// switch workflow IDs stay unique.
		state.UID, state.Classes = obs.UID, nil
	}
	ref.UID = obs.UID

	sync := activities.SyncInput{Pool: ref, Generation: obs.Generation}
	// The observed resourceVersion holds until the pass's first write.
	unwritten := obs.ResourceVersion
	var warnings []activities.EventInput
	var wake []string
	haveConfig := true
	classes := make([]wfapi.ClassState, 0, len(obs.Spec))
	for _, entry := range obs.Spec {
		cs := classState(state, entry.Name)
		st := obs.Status.ClassStatus(entry.Name)
		current, pending := "", ""
		var conditions []metav1.Condition
		if st != nil {
			current, pending, conditions = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), st.Conditions
		}
		res := resolve.Class(entry, current, obs.Configs)

		if res.Target != "" && res.Target != current {
			state.Switches++
			cs.Switches++
			out, err := runSwitch(ctx, state.Switches, SwitchInput{
				Pool: ref, Class: entry.Name, From: current, To: res.Target,
				FromDeleting: resolve.Deleting(obs.Configs, current), Generation: obs.Generation,
				PoolResourceVersion: unwritten,
			})
			if err != nil {
				return false, err
			}
			unwritten = ""
			if out.Outcome == wfapi.OutcomePoolGone {
				return true, nil
			}
			cs.LastOutcome = out.Outcome
			if out.Outcome == wfapi.OutcomeConfirmed {
				current = res.Target
			}
			cs.Config, cs.Pending, cs.Resolved, cs.Reason, cs.Message = current, "", out.Outcome == wfapi.OutcomeConfirmed, out.Reason, out.Message
			haveConfig = haveConfig && current != ""
			classes = append(classes, cs)
			continue
		}

		c := activities.ClassSync{Class: entry.Name, Resolved: res.Resolved, Reason: res.Reason, Message: res.Message}
		if res.Target == "" && current != "" {
			// Not keepable: gone, of another class, or in deletion without
			// the finalizer. Keeping its name would name a config that is
			// about to vanish.
			c.ClearConfig, current = true, ""
		}
		if pending != "" {
			// A claim no switch is working on: switches run inside passes,
			// so this one was left by a switch that was stopped by hand.
			c.ClearPending = true
			wake = append(wake, pending)
		}
		cond := poolstatus.ClassCondition(res.Resolved, res.Reason, res.Message, obs.Generation)
		if c.ClearConfig || c.ClearPending || !poolstatus.SameCondition(conditions, cond) {
			sync.Classes = append(sync.Classes, c)
			if !res.Resolved && !sameFailure(conditions, cond) {
				warnings = append(warnings, warning(ref, entry.Name, res.Reason, res.Message, obs.Generation))
			}
		}
		cs.Config, cs.Pending, cs.Resolved, cs.Reason, cs.Message = current, "", res.Resolved, res.Reason, res.Message
		haveConfig = haveConfig && current != ""
		classes = append(classes, cs)
	}
	state.Classes = classes

	// A new pool gets its Deployment once every class has a config; once it
	// exists it is kept as wanted on every pass, resolved or not, so scaling
	// and template edits keep working while a class does not resolve. It is
	// applied only when Observe found it not as wanted: a switch changes
	// nothing in it, and an apply that changes nothing still costs a write,
	// a read, an activity and its history events.
	if obs.DeploymentUpToDate && obs.Deployment != nil {
		sync.Deployment = obs.Deployment
	} else if obs.Deployment != nil || (haveConfig && len(obs.Spec) > 0) {
		var applied activities.DeploymentResult
		if err := workflow.ExecuteActivity(withActivities(ctx), act.ApplyDeployment, ref).Get(ctx, &applied); err != nil {
			return false, err
		}
		if applied.PoolGone {
			return true, nil
		}
		sync.Deployment = applied.Deployment
	}

	if needsSync(&obs, &sync) {
		var w activities.PoolWrite
		if err := workflow.ExecuteActivity(withActivities(ctx), act.SyncStatus, sync).Get(ctx, &w); err != nil {
			return false, err
		}
		if w.PoolGone {
			return true, nil
		}
	}
	// Events follow the write they report.
	for _, ev := range warnings {
		if err := workflow.ExecuteActivity(withActivities(ctx), act.RecordEvent, ev).Get(ctx, nil); err != nil {
			return false, err
		}
	}
	if len(wake) > 0 {
		if err := workflow.ExecuteActivity(withActivities(ctx), act.WakeReleases, wake).Get(ctx, nil); err != nil {
			return false, err
		}
	}
	return false, nil
}

// runSwitch runs the n-th switch of the pool as a child workflow, with the
// search attributes an operator traces it by.
func runSwitch(ctx workflow.Context, n int, in SwitchInput) (*SwitchResult, error) {
	attrs := []temporal.SearchAttributeUpdate{
		searchattr.WorkerPoolKey.ValueSet(wfapi.PoolKey(in.Pool.Namespace, in.Pool.Name)),
		searchattr.SandboxClassKey.ValueSet(string(in.Class)),
		searchattr.ToConfigKey.ValueSet(in.To),
	}
	if in.From != "" {
		attrs = append(attrs, searchattr.FromConfigKey.ValueSet(in.From))
	}
	summary := fmt.Sprintf("%s: sandbox class %q from %q to %q", wfapi.PoolKey(in.Pool.Namespace, in.Pool.Name), in.Class, in.From, in.To)
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            wfapi.SwitchWorkflowID(in.Pool.Namespace, in.Pool.Name, n),
		TypedSearchAttributes: temporal.NewSearchAttributes(attrs...),
		Memo:                  map[string]any{"summary": summary},
		// The pool's switches run one at a time: a switch never outlives
		// the pool workflow that started it.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	})
	var out SwitchResult
	if err := workflow.ExecuteChildWorkflow(ctx, wfapi.SwitchWorkflow, in).Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("switch %d of WorkerPool %s: %w", n, in.Pool, err)
	}
	return &out, nil
}

// needsSync reports whether the pass has anything to write: no write when
// nothing changed.
func needsSync(obs *activities.Observation, sync *activities.SyncInput) bool {
	if len(sync.Classes) > 0 || obs.Status.ObservedGeneration < obs.Generation {
		return true
	}
	if d := sync.Deployment; d != nil && (d.Replicas != obs.Status.Replicas ||
		d.ReadyReplicas != obs.Status.ReadyReplicas || d.Selector != obs.Status.Selector) {
		return true
	}
	want := poolstatus.Summary(obs.Spec, obs.Status.SandboxClasses, obs.Generation)
	return !poolstatus.SameCondition(obs.Status.Conditions, want)
}

// sameFailure reports whether the class already showed this failure, so a
// pass that only refreshes observedGeneration does not warn again.
func sameFailure(conditions []metav1.Condition, c metav1.Condition) bool {
	for _, old := range conditions {
		if old.Type == c.Type {
			return old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message
		}
	}
	return false
}

func classState(state *wfapi.PoolState, class v1alpha1.SandboxClass) wfapi.ClassState {
	for _, c := range state.Classes {
		if c.Name == string(class) {
			return c
		}
	}
	return wfapi.ClassState{Name: string(class)}
}
