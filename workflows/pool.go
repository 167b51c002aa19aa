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
// writes what changed. It reports whether the pool is gone. Its phases run
// in this order, each on what the previous ones learnt: observe, plan each
// class (switching those that must move), keep the Deployment, write the
// status, notify (events follow the write they report).
func pass(ctx workflow.Context, in wfapi.PoolInput, state *wfapi.PoolState) (gone bool, err error) {
	state.Passes++
	p, gone, err := observePool(ctx, in, state)
	if err != nil || gone {
		return gone, err
	}
	for _, step := range []func(workflow.Context) (bool, error){
		func(ctx workflow.Context) (bool, error) { return p.planClasses(ctx, state) },
		p.keepDeployment,
		p.writeStatus,
		p.notify,
	} {
		if gone, err := step(ctx); err != nil || gone {
			return gone, err
		}
	}
	return false, nil
}

// poolPass is what one pass has learnt and what it will write.
type poolPass struct {
	ref activities.PoolRef
	obs activities.Observation
	// sync is the status write, built up by the phases.
	sync activities.SyncInput
	// unwritten is the observed resourceVersion; it holds until the pass's
	// first write.
	unwritten string
	warnings  []activities.EventInput
	// wake names the configs whose releases a cleared claim may unblock.
	wake []string
	// haveConfig: every class has a config, so a new pool gets its
	// Deployment.
	haveConfig bool
}

// observePool reads the pool and what it resolves against, and resets the
// state learnt about an earlier incarnation of the pool.
func observePool(ctx workflow.Context, in wfapi.PoolInput, state *wfapi.PoolState) (*poolPass, bool, error) {
	var obs activities.Observation
	ref := activities.PoolRef{Namespace: in.Namespace, Name: in.Name}
	if err := workflow.ExecuteLocalActivity(withLocalActivities(ctx), act.Observe, ref).Get(ctx, &obs); err != nil {
		return nil, false, err
	}
	if !obs.Exists {
		return nil, true, nil
	}
	if state.UID != obs.UID {
		// A new incarnation of the pool (or the first pass): forget what
		// was learnt about the old one, but keep counting switches so the
		// switch workflow IDs stay unique.
		state.UID, state.Classes = obs.UID, nil
	}
	ref.UID = obs.UID
	return &poolPass{
		ref: ref, obs: obs, unwritten: obs.ResourceVersion, haveConfig: true,
		sync: activities.SyncInput{Pool: ref, Generation: obs.Generation},
	}, false, nil
}

// planClasses resolves each class of the spec: a class whose target differs
// from its config switches now (a child workflow), the others get their
// condition, cleared refs and warnings planned for the status write.
func (p *poolPass) planClasses(ctx workflow.Context, state *wfapi.PoolState) (gone bool, err error) {
	classes := make([]wfapi.ClassState, 0, len(p.obs.Spec))
	for _, entry := range p.obs.Spec {
		cs := classState(state, entry.Name)
		current, pending := "", ""
		var conditions []metav1.Condition
		if st := p.obs.Status.ClassStatus(entry.Name); st != nil {
			current, pending, conditions = st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), st.Conditions
		}
		res := resolve.Class(entry, current, p.obs.Configs)
		if res.Target != "" && res.Target != current {
			state.Switches++
			cs.Switches++
			if gone, err := p.switchClass(ctx, state.Switches, &cs, entry.Name, current, res.Target); err != nil || gone {
				return gone, err
			}
		} else {
			p.planSync(&cs, entry.Name, res, current, pending, conditions)
		}
		p.haveConfig = p.haveConfig && cs.Config != ""
		classes = append(classes, cs)
	}
	state.Classes = classes
	return false, nil
}

// switchClass runs the n-th switch of the pool for one class and records
// its outcome in cs.
func (p *poolPass) switchClass(ctx workflow.Context, n int, cs *wfapi.ClassState, class v1alpha1.SandboxClass, current, target string) (gone bool, err error) {
	out, err := runSwitch(ctx, n, SwitchInput{
		Pool: p.ref, Class: class, From: current, To: target,
		FromDeleting: resolve.Deleting(p.obs.Configs, current), Generation: p.obs.Generation,
		PoolResourceVersion: p.unwritten,
	})
	if err != nil {
		return false, err
	}
	p.unwritten = ""
	if out.Outcome == wfapi.OutcomePoolGone {
		return true, nil
	}
	cs.LastOutcome = out.Outcome
	if out.Outcome == wfapi.OutcomeConfirmed {
		current = target
	}
	cs.Config, cs.Pending, cs.Resolved, cs.Reason, cs.Message = current, "", out.Outcome == wfapi.OutcomeConfirmed, out.Reason, out.Message
	return false, nil
}

// planSync plans the status write of a class that does not switch: its
// condition, a config that cannot be kept, a claim no switch works on, and
// the Warning of a failure that appears or changes.
func (p *poolPass) planSync(cs *wfapi.ClassState, class v1alpha1.SandboxClass, res resolve.Result, current, pending string, conditions []metav1.Condition) {
	c := activities.ClassSync{Class: class, Resolved: res.Resolved, Reason: res.Reason, Message: res.Message}
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
		p.wake = append(p.wake, pending)
	}
	cond := poolstatus.ClassCondition(res.Resolved, res.Reason, res.Message, p.obs.Generation)
	if c.ClearConfig || c.ClearPending || !poolstatus.SameCondition(conditions, cond) {
		p.sync.Classes = append(p.sync.Classes, c)
		if !res.Resolved && !sameFailure(conditions, cond) {
			p.warnings = append(p.warnings, warning(p.ref, class, res.Reason, res.Message, p.obs.Generation))
		}
	}
	cs.Config, cs.Pending, cs.Resolved, cs.Reason, cs.Message = current, "", res.Resolved, res.Reason, res.Message
}

// keepDeployment: a new pool gets its Deployment once every class has a
// config; once it exists it is kept as wanted on every pass, resolved or
// not, so scaling and template edits keep working while a class does not
// resolve. It is applied only when Observe found it not as wanted: a switch
// changes nothing in it, and an apply that changes nothing still costs a
// write, a read, an activity and its history events.
func (p *poolPass) keepDeployment(ctx workflow.Context) (gone bool, err error) {
	obs := &p.obs
	if obs.DeploymentUpToDate && obs.Deployment != nil {
		p.sync.Deployment = obs.Deployment
		return false, nil
	}
	if obs.Deployment == nil && (!p.haveConfig || len(obs.Spec) == 0) {
		return false, nil
	}
	var applied activities.DeploymentResult
	if err := workflow.ExecuteActivity(withActivities(ctx), act.ApplyDeployment, p.ref).Get(ctx, &applied); err != nil {
		return false, err
	}
	p.sync.Deployment = applied.Deployment
	return applied.PoolGone, nil
}

// writeStatus writes the planned status, when it changes anything.
func (p *poolPass) writeStatus(ctx workflow.Context) (gone bool, err error) {
	if !needsSync(&p.obs, &p.sync) {
		return false, nil
	}
	var w activities.PoolWrite
	if err := workflow.ExecuteActivity(withActivities(ctx), act.SyncStatus, p.sync).Get(ctx, &w); err != nil {
		return false, err
	}
	return w.PoolGone, nil
}

// notify records the planned Warnings and wakes the releases a cleared
// claim may unblock.
func (p *poolPass) notify(ctx workflow.Context) (gone bool, err error) {
	for _, ev := range p.warnings {
		if err := workflow.ExecuteActivity(withActivities(ctx), act.RecordEvent, ev).Get(ctx, nil); err != nil {
			return false, err
		}
	}
	if len(p.wake) > 0 {
		if err := workflow.ExecuteActivity(withActivities(ctx), act.WakeReleases, p.wake).Get(ctx, nil); err != nil {
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
	want := poolstatus.LegacySummary(obs.Spec, obs.Status.SandboxClasses, obs.Generation)
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
