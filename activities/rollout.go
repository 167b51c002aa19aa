package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/notify"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/rolloutplan"
	"ate.dev/orchestrator/internal/wfapi"
)

// The rollout workflow's activities (workflows/rollout.go): a look at the
// config and its class's pools, the admission of a step (the one write that
// lets pools move), the wait for the admitted pools, and the config's
// status and Warning events. Each acts only on the config the calling
// workflow's ID names.
//
// What they read (docs/decisions/0023-rollout-reads-the-cache.md): the
// rolling config itself live, one small GET per look, since it binds the
// run to an incarnation and holds the admission the wait judges by; the
// class's unpinned pools and the other configs from the worker's informer
// cache (Activities.Cache), the pools through poolwatch.UnpinnedClassIndex,
// so a look costs the API server nothing but that GET, whatever the fleet.
// No rollout activity lists WorkerPools or SandboxConfigs on the API
// server. What a cache may not be trusted with is read live: the wait
// confirms each admitted pool the cache calls ready with a GET of its own,
// once per attempt (see WaitRolloutStep), and a newer class default the
// cache shows is read live before a rollout is ended as superseded by it
// (newestDefault).
//
// +kubebuilder:rbac:groups=ate.dev,resources=sandboxconfigs/status,verbs=get;patch

// DefaultRolloutStepDeadline is how long a step's admitted pools may take
// to move and be Available before the rollout halts, when the worker's
// setting is unset.
const DefaultRolloutStepDeadline = 30 * time.Minute

// rolloutPollInterval is how often WaitRolloutStep looks at the pools in
// the worker's cache (memory, no request but the config's GET) when no
// event of its class's pools wakes it sooner: what no pool event shows
// (the config's own changes, the deadline) is seen within it, and it is
// the whole schedule of activities built without Activities.PoolEvents.
// It also paces the wait's writes of the status's counts.
const rolloutPollInterval = time.Second

// rolloutLookGap is the least time from the start of one look of
// WaitRolloutStep to the next that an event of its class's pools asks for:
// a step's pools change in bursts (a switch's writes, the keeper's), and
// the wait looks at most once per gap while they flow, not once an event.
const rolloutLookGap = 200 * time.Millisecond

// rolloutConfirmConcurrency bounds the live GETs by which WaitRolloutStep
// confirms the pools its cache calls ready.
const rolloutConfirmConcurrency = 16

// rolloutAskPerLook bounds the live GETs of one look of WaitRolloutStep. A
// look that had more to ask leaves the rest to the next look, which comes
// at once, after a heartbeat: a step of thousands of pools that become
// ready together is read in parts, none long enough to outlast the
// heartbeat timeout.
const rolloutAskPerLook = 256

// ErrNoCache: the activities were built without the worker's cache, which
// the rollout activities read the class's pools and configs from. A bug
// of whoever built them; no retry fixes it.
const ErrNoCache = "NoCache"

// RolloutLook is what a rollout decides its next step on: the config as
// read live, its class's other configs and unpinned pools as the worker's
// cache shows them.
type RolloutLook struct {
	// Stop, when set, ends the rollout with this phase and StopMessage:
	// Completed (status says so), Superseded (a newer class default) or
	// Stopped (gone, in deletion, no longer a default, or spec.rollout
	// removed). rollout.Liveness says which; v0.1.0 runs read it.
	Stop        v1alpha1.RolloutPhase `json:"stop,omitempty"`
	StopMessage string                `json:"stopMessage,omitempty"`
	// Exists is false when the config is gone: nothing to write on.
	Exists     bool  `json:"exists"`
	Generation int64 `json:"generation,omitempty"`
	Paused     bool  `json:"paused,omitempty"`
	// Steps is the number of steps of spec.rollout.
	Steps int32 `json:"steps,omitempty"`
	// Status is status.rollout as read (zero when absent).
	Status v1alpha1.RolloutStatus `json:"status"`
	// Deadline is the worker's setting: how long a step's pools may take.
	Deadline time.Duration `json:"deadline"`
	// Plan is the rollout's plan as the pools stand.
	Plan wfapi.RolloutPlan `json:"plan"`
	// Verdict is the planner's (rollout.Decide) answer to the run that
	// asked: what it does next.
	Verdict rollout.Verdict `json:"verdict"`
	// After is what the look read of the rollouts of spec.rollout.after's
	// clusters, while the first step waits for them (else none).
	After []rollout.ClusterRollout `json:"after,omitempty"`
}

// LookInput asks for a look on behalf of a run: the incarnation (UID) it
// is bound to ("" before its first look) and the steps it has done (-1 on
// its first look). A v0.1.0 run sends only the config.
type LookInput struct {
	Config string    `json:"config"`
	UID    types.UID `json:"uid,omitempty"`
	Done   int32     `json:"done,omitempty"`
}

// LookAtRollout reads a rolling-out config (live), the other configs and
// the class's unpinned pools (from the worker's cache), and asks the
// planner what the rollout does next. A cache that lags shows the fleet as
// it was a moment ago: the verdict is the one a look taken then would
// have given, and the next look (the starter's recheck, repeated while the
// rollout is under way; every look of a step's wait) corrects it. It
// cannot end a rollout as superseded by a default the API server no
// longer has (newestDefault reads that one live).
func (a *Activities) LookAtRollout(ctx context.Context, in LookInput) (*RolloutLook, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return nil, err
	}
	cache, err := a.rolloutCache()
	if err != nil {
		return nil, err
	}
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil {
		return nil, err
	}
	if c == nil {
		look := &RolloutLook{Stop: v1alpha1.RolloutStopped, StopMessage: fmt.Sprintf("SandboxConfig %q is gone", in.Config)}
		look.Verdict = rollout.Decide(rollout.Facts{Bound: in.UID, Done: in.Done})
		return look, nil
	}
	look := &RolloutLook{Exists: true, Generation: c.Generation, Deadline: a.rolloutStepDeadline()}
	if c.Status.Rollout != nil {
		look.Status = *c.Status.Rollout
	}
	if r := c.Spec.Rollout; r != nil {
		look.Paused, look.Steps = r.Paused, int32(len(r.Steps))
	}
	newest, err := a.newestDefault(ctx, cache, c)
	if err != nil {
		return nil, err
	}
	look.Stop, look.StopMessage = rollout.Liveness(c, newest)
	var plain []rollout.Pool
	if look.Stop == "" {
		pools, err := poolwatch.ClassPools(ctx, cache, c.Class())
		if err != nil {
			return nil, err
		}
		plain = rollout.Plain(pools)
		look.Plan = rolloutplan.Of(c, plain)
	}
	facts := rollout.Facts{Config: c, Newest: newest, Pools: plain, Bound: in.UID, Done: in.Done, Cluster: string(a.Scope.Cluster)}
	if look.Stop == "" && rollout.AwaitsClusters(c, in.Done) {
		// spec.rollout.after, before the first step: the other clusters'
		// rollouts, read through Temporal (rollout_after.go).
		if facts.After, facts.Now, err = a.readAfter(ctx, c); err != nil {
			return nil, err
		}
		look.After = facts.After
	}
	look.Verdict = rollout.Decide(facts)
	return look, nil
}

// AdmitInput asks for a step's admission. Prev is the last pool admitted
// before the step as a v0.1.0 run knows it (status is what counts now); UID
// the incarnation the run is bound to ("" from a v0.1.0 run).
type AdmitInput struct {
	Config     string           `json:"config"`
	Step       int32            `json:"step"`
	Prev       *rollout.PoolKey `json:"prev,omitempty"`
	WorkflowID string           `json:"workflowID"`
	Generation int64            `json:"generation,omitempty"`
	UID        types.UID        `json:"uid,omitempty"`
}

// Admitted is a step's admission.
type Admitted struct {
	// Gone is true when the config is gone (or is another incarnation):
	// the workflow looks again.
	Gone bool `json:"gone,omitempty"`
	// Through is the last pool admitted by name; Pools the pools the step
	// admitted, in order: every one since the step was first admitted, so
	// that a step taken again gives its gate the same pools.
	Through  *rollout.PoolKey `json:"through,omitempty"`
	Pools    []string         `json:"pools"`
	Want     int              `json:"want"`
	Admitted int              `json:"admitted"`
	Total    int              `json:"total"`
	// Pause is the step's bake time; Gate its gate, if any, GateTimeout
	// how long one run of it may take.
	Pause       time.Duration         `json:"pause,omitempty"`
	Gate        *v1alpha1.RolloutGate `json:"gate,omitempty"`
	GateTimeout time.Duration         `json:"gateTimeout,omitempty"`
	// Refused says why the gate may not run (it names the orchestrator's
	// own workflow type or task queue): the step halts with it.
	Refused string `json:"refused,omitempty"`
	// Approval is the step's approval: it waits for a promote once its
	// pools moved and its gate passed.
	Approval bool `json:"approval,omitempty"`
	// Full is true when a promote --full made this step admit every pool.
	Full bool `json:"full,omitempty"`
	// Class is the config's sandbox class; Analysis spec.rollout.analysis
	// and OnFailure spec.rollout.onFailure as the step was admitted.
	Class     string                        `json:"class,omitempty"`
	Analysis  *v1alpha1.RolloutAnalysis     `json:"analysis,omitempty"`
	OnFailure v1alpha1.RolloutFailurePolicy `json:"onFailure,omitempty"`
}

// DefaultGateTimeout bounds a gate's run when spec.rollout.gate.timeout is
// unset.
const DefaultGateTimeout = 30 * time.Minute

// AdmitRolloutStep admits the pools of a step: it writes status.rollout with
// the step, the admission before it (stepStart, kept when the step is taken
// again) and the admission now, which the starter and every resolver read.
// Admission only grows (rollout.Advance), so a step run again after a crash
// admits what it admitted before and nothing back.
//
// The config is read live (the admission grows from the one the API
// server holds, and the write is bound to its UID); the class's pools come
// from the worker's cache. A cache that lags admits as a list taken a
// moment earlier would have: a pool it does not show yet is not counted
// (the next step, or the completion, which admits every pool, covers it),
// a pool it still shows on the config counts as admitted already. The
// admission is by name marks either way, only grows, and the wait judges
// the pools it admits as they are, not as this snapshot saw them.
func (a *Activities) AdmitRolloutStep(ctx context.Context, in AdmitInput) (*Admitted, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return nil, err
	}
	cache, err := a.rolloutCache()
	if err != nil {
		return nil, err
	}
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil || c == nil || (in.UID != "" && c.UID != in.UID) {
		return &Admitted{Gone: true}, err
	}
	if c.Spec.Rollout == nil || in.Step < 1 || int(in.Step) > len(c.Spec.Rollout.Steps) {
		return &Admitted{Gone: true}, nil // spec changed under the workflow: it looks again
	}
	step := c.Spec.Rollout.Steps[in.Step-1]
	pools, err := poolwatch.ClassPools(ctx, cache, c.Class())
	if err != nil {
		return nil, err
	}
	plain := rollout.Plain(pools)
	prev := rollout.StatusAdmission(c.Status.Rollout)
	st := v1alpha1.RolloutStatus{}
	if c.Status.Rollout != nil {
		st = *c.Status.Rollout
	}
	if prev.Through == nil && len(prev.Canaries) == 0 && in.Prev != nil {
		prev.Through = in.Prev // a v0.1.0 run whose admission status lost
	}
	mark := prev.Mark()
	if st.Step == in.Step && st.StepStart != nil {
		mark = st.StepStart // the step taken again: the same start
	}
	res := &Admitted{Want: rollout.Want(step, len(plain)), Total: len(plain), Gate: c.Spec.Rollout.Gate, Approval: step.Approval,
		Class: string(c.Class()), Analysis: c.Spec.Rollout.Analysis, OnFailure: c.Spec.Rollout.OnFailure}
	if st.PromotedFull {
		// Recorded by the look that answered the promote --full, before
		// this step was taken: every pool, whatever the step says.
		res.Want, res.Full = len(plain), true
	}
	if step.Pause != nil {
		res.Pause = step.Pause.Duration
	}
	if g := res.Gate; g != nil {
		res.GateTimeout = DefaultGateTimeout
		if g.Timeout != nil && g.Timeout.Duration > 0 {
			res.GateTimeout = g.Timeout.Duration
		}
		res.Refused = a.refuseGate(ctx, g)
	}
	next, admitted := rollout.Advance(plain, c.Name, res.Want, prev)
	res.Through, res.Admitted = next.Through, admitted
	res.Pools = rollout.Between(plain, c.Name, prev.AtMark(mark), next)
	if in.UID == "" {
		// A v0.1.0 run records the step's pools itself, adding them up
		// over the step's admissions: give it only the new ones.
		res.Pools = rollout.Between(plain, c.Name, prev, next)
	}
	_, moved := rollout.Count(plain, c.Name, next)
	fields := map[string]any{
		"phase": v1alpha1.RolloutProgressing, "step": in.Step, "workflowID": in.WorkflowID,
		"admittedThrough": rollout.RefOf(next.Through), "admittedCanaries": nilIfEmpty(next.Canaries), "stepStart": mark,
		"awaitingClusters": nil,
		"message": fmt.Sprintf("step %d of %d: %d of %d pools admitted; waiting for them to move and be Available",
			in.Step, len(c.Spec.Rollout.Steps), admitted, len(plain)),
	}
	poolCounts{admitted: admitted, moved: moved, total: len(plain)}.into(fields)
	if in.Generation != 0 {
		fields["observedGeneration"] = in.Generation
	}
	if st.Step != in.Step {
		fields["analysis"] = nil // the last step's measurements
	}
	if err := a.patchRolloutRaw(ctx, c.Name, c.UID, fields); err != nil {
		return nil, err
	}
	return res, nil
}

// refuseGate says why a gate may not run: it would start a workflow of the
// orchestrator's own, or one on the orchestrator's task queue, with the
// worker's credentials (the CRD refuses the defaults; this catches a task
// queue set by flag).
func (a *Activities) refuseGate(ctx context.Context, g *v1alpha1.RolloutGate) string {
	switch g.WorkflowType {
	case wfapi.SwitchWorkflow, wfapi.ReleaseWorkflow, wfapi.RolloutWorkflow, wfapi.OperatorWorkflow:
		return fmt.Sprintf("spec.rollout.gate.workflowType %q is a workflow type of the orchestrator's own; a gate is a workflow of yours", g.WorkflowType)
	}
	if activity.IsActivity(ctx) && g.TaskQueue == activity.GetInfo(ctx).TaskQueue {
		return fmt.Sprintf("spec.rollout.gate.taskQueue %q is the orchestrator's own task queue; a gate runs on a task queue of your own worker", g.TaskQueue)
	}
	return ""
}

func nilIfEmpty(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s
}

// WaitInput asks WaitRolloutStep to wait for a step's admitted pools until
// Deadline.
type WaitInput struct {
	Config string `json:"config"`
	// UID is the incarnation the run is bound to ("" from a v0.1.0 run).
	UID      types.UID `json:"uid,omitempty"`
	Step     int32     `json:"step"`
	Deadline time.Time `json:"deadline"`
	// Since is when the step was (again) admitted: a failing switch
	// halts it only if it failed since (a failure the user resumed from
	// gets the step's deadline to clear, as the switch's retries back off).
	Since time.Time `json:"since"`
}

// Outcomes of WaitRolloutStep.
const (
	StepReady  = "Ready"
	StepHalted = "Halted"
	// StepLookAgain: the config changed under the rollout (gone, no longer
	// the class's newest default): the workflow looks again.
	StepLookAgain = "LookAgain"
)

// StepWait is how a step's wait ended.
type StepWait struct {
	Outcome string `json:"outcome"`
	// Pool and Message say which pool halted the step, and why.
	Pool    string `json:"pool,omitempty"`
	Message string `json:"message,omitempty"`
	Moved   int    `json:"moved"`
	// What a look counted, for the status's counts.
	admitted, total int
	uid             types.UID
	// more: the look left pools to ask about (rolloutAskPerLook).
	more bool
}

// WaitRolloutStep waits, heartbeating, until every pool the rollout
// admits is on the config with its Available condition True (Ready); until
// one's switch fails (its class shows SwitchStepFailing, or Resolved False:
// a roll back, since the step was admitted), or the deadline passes with
// one not there (Halted); or until the config is no longer the rollout's
// to run (LookAgain). It keeps status.rollout.movedPools current as pools
// move, writing the counts at most once a second.
//
// Each look reads the config live (one GET) and the class's pools from the
// worker's cache (memory). It looks when the worker's informer reports a
// change of the class's pools (Activities.PoolEvents), at most once per
// rolloutLookGap while changes flow, and at least once a second
// (rolloutPollInterval) without: a step ends a fraction of a second after
// its last pool is there, not up to a second. The cache decides when to
// look and which pools to ask about; the API server decides the outcome:
//
//   - A step is not done until each admitted pool was seen, after the
//     step's admission, on the config (status names it, no pending ref)
//     and Available. The cache cannot prove that: it may lag and show a
//     state from before the admission (after an abort and a retry, a pool's
//     state on the config from before it was sent back). So each look
//     reads with a GET the admitted pools the cache newly calls ready and
//     this attempt has not seen ready live: the GETs are spread over the
//     step as its pools get there, not made all at its end. This activity
//     runs after the admission's write completed (the workflow schedules
//     it once AdmitRolloutStep returned), so every GET it makes is after
//     the admission: a pool it reads ready was seen ready after the
//     admission. The step ends once the cache shows no admitted pool
//     waiting and every one was so confirmed. A pool the GET shows not
//     ready is asked again only once the cache shows it at another
//     resourceVersion (the cache caught up), so a lagging cache costs no
//     GET per look.
//   - A halt is read live too: a failing switch or the deadline halts the
//     step only on the pool's state as a GET returned it.
//
// The GETs are bounded (rolloutConfirmConcurrency at once, rolloutAskPerLook
// a look), and a pool seen ready live is remembered for the rest of the
// attempt: a step costs about one GET per admitted pool, and no LIST.
func (a *Activities) WaitRolloutStep(ctx context.Context, in WaitInput) (*StepWait, error) {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return nil, err
	}
	cache, err := a.rolloutCache()
	if err != nil {
		return nil, err
	}
	w := &stepWatch{cache: cache, events: a.PoolEvents, confirmed: map[poolID]bool{}, asked: map[string]liveAnswer{}}
	poll := a.rolloutPoll
	if poll <= 0 {
		poll = rolloutPollInterval
	}
	lastMoved := -1
	var countsWritten time.Time
	for {
		began := time.Now()
		res, err := a.lookAtStep(ctx, in, w)
		if err != nil {
			return nil, err
		}
		if res.Outcome != "" {
			return res, nil
		}
		if res.Moved != lastMoved && time.Since(countsWritten) >= rolloutPollInterval {
			lastMoved, countsWritten = res.Moved, time.Now()
			counts := poolCounts{admitted: res.admitted, moved: res.Moved, total: res.total}
			if err := a.patchRolloutRaw(ctx, in.Config, res.uid, counts.into(map[string]any{})); err != nil {
				return nil, err
			}
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, res.Moved)
		}
		if res.more {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue // pools left to ask: at once
		}
		if err := nextLook(ctx, w.changed, began, poll); err != nil {
			return nil, err
		}
	}
}

// nextLook waits for the wait's next look: a change of the class's pools
// since the last look began (changed closed), but not sooner than
// rolloutLookGap after that look began, or poll after now, whichever
// comes first.
func nextLook(ctx context.Context, changed <-chan struct{}, began time.Time, poll time.Duration) error {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	case <-changed:
	}
	gap := time.NewTimer(rolloutLookGap - time.Since(began))
	defer gap.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-gap.C:
		return nil
	}
}

// stepWatch is what one attempt of WaitRolloutStep has learnt from the API
// server: the pools it saw ready live, and its last live answer for each
// pool it asked about, with the cache's version of the pool then.
type stepWatch struct {
	cache ctrlclient.Reader
	// events wakes the wait when the class's pools change (nil: never);
	// changed is the wake-up of the last look, asked for before the look
	// read the cache, so a change the look missed is not missed.
	events  *notify.Notifier
	changed <-chan struct{}
	// confirmed: a GET of this attempt showed the pool (this incarnation)
	// admitted, on the config and Available. The attempt began after the
	// admission, so that is the proof the step needs of it.
	confirmed map[poolID]bool
	// asked is the last live answer per pool ("namespace/name"). It
	// stands while the cache shows the pool at the resourceVersion it
	// showed when asked: the answer is at least as new as that state.
	asked map[string]liveAnswer
}

type poolID struct {
	key string
	uid types.UID
}

// liveAnswer is a pool as a GET returned it, and the cache's
// resourceVersion of the pool when it was asked. pool is nil when the
// GET found no rollout's pool there (gone, pinned, in deletion).
type liveAnswer struct {
	cachedRV string
	pool     *rollout.ClassPool
}

// view is the freshest state of p the attempt has: its live answer while
// the cache still shows p as it did when asked, else the cache's. live
// says which; nil is no rollout's pool.
func (w *stepWatch) view(p *rollout.ClassPool) (v *rollout.ClassPool, live bool) {
	if ans, ok := w.asked[p.Key.String()]; ok && ans.cachedRV == p.ResourceVersion {
		return ans.pool, true
	}
	return p, false
}

// poolVerdict is how an admitted pool stands for the step.
type poolVerdict int

const (
	poolReady poolVerdict = iota
	poolWaiting
	poolFailing
)

// judgeStepPool says how p stands for the step: failing (not on the config,
// its switch failing since the step began), waiting (not on the config, a
// claim pending, or not Available, with why) or ready.
func judgeStepPool(p *rollout.ClassPool, config string, since time.Time) (poolVerdict, string) {
	switch {
	case p.Current != config && p.Failing != "" && !p.FailingSince.Before(since.Truncate(time.Second)):
		return poolFailing, fmt.Sprintf("the switch of WorkerPool %s to SandboxConfig %q failed: %s", p.Key, config, p.Failing)
	case p.Current != config || p.Pending != "":
		return poolWaiting, fmt.Sprintf("WorkerPool %s has not moved to SandboxConfig %q (its status names %q)", p.Key, config, p.Current)
	case !p.Available:
		return poolWaiting, fmt.Sprintf("WorkerPool %s is not Available: %s", p.Key, p.AvailableMessage)
	}
	return poolReady, ""
}

// lookAtStep is one look of WaitRolloutStep: an Outcome when the wait is
// over, else the pools moved so far.
func (a *Activities) lookAtStep(ctx context.Context, in WaitInput, w *stepWatch) (*StepWait, error) {
	// The config live: its UID binds the wait to the run's incarnation,
	// and its admission is the one the step wrote or a later one (a
	// cached copy could show the admission before this step's, and the
	// wait would judge too few pools).
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil {
		return nil, err
	}
	if c == nil || (in.UID != "" && c.UID != in.UID) {
		return &StepWait{Outcome: StepLookAgain}, nil
	}
	newest, err := a.newestDefault(ctx, w.cache, c)
	if err != nil {
		return nil, err
	}
	if phase, _ := rollout.Liveness(c, newest); phase != "" {
		return &StepWait{Outcome: StepLookAgain}, nil
	}
	w.changed = w.events.Changed(string(c.Class()))
	pools, err := poolwatch.ClassPools(ctx, w.cache, c.Class())
	if err != nil {
		return nil, err
	}
	adm := rollout.AdmissionOf(c)
	late := time.Now().After(in.Deadline)
	more := false
	for asked := false; ; asked = true {
		// The counts, for status, are the cache's; whether the step is
		// done, or halts, is decided on live answers only.
		res := &StepWait{total: len(pools), uid: c.UID}
		var waiting, failing *StepWait
		var askFailing, askWaiting, askReady []*rollout.ClassPool
		for i := range pools {
			p := &pools[i]
			if p.Current == c.Name {
				res.Moved++
			}
			if adm.Admits(p.Key, p.Current, c.Name) {
				res.admitted++
			}
			v, live := w.view(p)
			if v == nil || !adm.Admits(v.Key, v.Current, c.Name) {
				continue
			}
			verdict, msg := judgeStepPool(v, c.Name, in.Since)
			switch {
			case verdict == poolFailing && live:
				return &StepWait{Outcome: StepHalted, Pool: v.Key.String(), Moved: res.Moved, Message: msg}, nil
			case verdict == poolFailing:
				askFailing = append(askFailing, p)
				failing = &StepWait{Pool: v.Key.String(), Message: msg}
			case verdict == poolWaiting:
				if waiting == nil {
					waiting = &StepWait{Pool: v.Key.String(), Message: msg}
				}
				if !live {
					askWaiting = append(askWaiting, p)
				}
			case !w.confirmed[poolID{v.Key.String(), v.UID}]:
				askReady = append(askReady, p) // ready in the cache, not yet seen ready live
			}
		}
		// What to ask the API server before a verdict: about a switch the
		// cache shows failing; about each pool the cache calls ready that
		// this attempt has not confirmed, as soon as the cache does; at the
		// deadline, about every pool not confirmed. At most
		// rolloutAskPerLook of them, the failing first: the next look asks
		// the rest.
		ask := append(askFailing, askReady...)
		if late {
			ask = append(ask, askWaiting...)
		}
		if len(ask) > 0 && !asked {
			more = len(ask) > rolloutAskPerLook
			if err := a.askPools(ctx, w, c, adm, in.Since, ask[:min(len(ask), rolloutAskPerLook)]); err != nil {
				return nil, err
			}
			continue
		}
		res.more = more
		switch {
		case waiting == nil && failing == nil && len(askReady) == 0:
			res.Outcome = StepReady
		case late && waiting != nil && failing == nil && len(askWaiting) == 0:
			// Every pool that waits was read live since the cache last
			// showed it changed.
			res.Outcome, res.Pool = StepHalted, waiting.Pool
			res.Message = fmt.Sprintf("step %d not done by its deadline: %s", in.Step, waiting.Message)
		}
		return res, nil
	}
}

// askPools reads pools live, rolloutConfirmConcurrency at once,
// heartbeating as it goes, and records each answer in w: a pool the API
// server shows admitted, on the config and Available is confirmed for the
// rest of the attempt.
func (a *Activities) askPools(ctx context.Context, w *stepWatch, c *v1alpha1.SandboxConfig, adm *rollout.Admission, since time.Time, pools []*rollout.ClassPool) error {
	answers := make([]liveAnswer, len(pools))
	errs := make([]error, len(pools))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(rolloutConfirmConcurrency, len(pools)) {
		wg.Go(func() {
			for i := range next {
				answers[i], errs[i] = a.askPool(ctx, c.Class(), pools[i])
			}
		})
	}
	for i := range pools {
		next <- i
		if i%rolloutConfirmConcurrency == 0 && activity.IsActivity(ctx) {
			// Thousands of GETs may outlast the heartbeat timeout: each
			// batch handed out is progress (the SDK throttles the sends).
			activity.RecordHeartbeat(ctx)
		}
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, ans := range answers {
		w.asked[pools[i].Key.String()] = ans
		if v := ans.pool; v != nil && adm.Admits(v.Key, v.Current, c.Name) {
			if verdict, _ := judgeStepPool(v, c.Name, since); verdict == poolReady {
				w.confirmed[poolID{v.Key.String(), v.UID}] = true
			}
		}
	}
	return nil
}

// askPool is one pool as the API server has it now.
func (a *Activities) askPool(ctx context.Context, class v1alpha1.SandboxClass, p *rollout.ClassPool) (liveAnswer, error) {
	ans := liveAnswer{cachedRV: p.ResourceVersion}
	var wp v1alpha1.WorkerPool
	switch err := a.Live.Get(ctx, ctrlclient.ObjectKey{Namespace: p.Key.Namespace, Name: p.Key.Name}, &wp); {
	case apierrors.IsNotFound(err):
		return ans, nil
	case err != nil:
		return ans, fmt.Errorf("reading WorkerPool %s for the rollout's step: %w", p.Key, err)
	}
	if live, ok := rollout.ClassPoolOf(&wp, class); ok {
		ans.pool = &live
	}
	return ans, nil
}

// RolloutStatusInput is a write of status.rollout's phase and message.
// Clear also drops the admission (a rollout stopped because its config is
// no longer a default starts over if it becomes one again). UID binds the
// write to the incarnation the run is bound to ("" from a v0.1.0 run);
// the other fields record what outlives a run: a halt (Halt, ClearHalt),
// a pause signal (SignalPaused), a resume request answered (Resume), the
// pause of a halted rollout seen (PausedSeen).
type RolloutStatusInput struct {
	Config             string                `json:"config"`
	Phase              v1alpha1.RolloutPhase `json:"phase"`
	Message            string                `json:"message"`
	Step               int32                 `json:"step,omitempty"`
	WorkflowID         string                `json:"workflowID,omitempty"`
	ObservedGeneration int64                 `json:"observedGeneration,omitempty"`
	Clear              bool                  `json:"clear,omitempty"`
	UID                types.UID             `json:"uid,omitempty"`
	Halt               *v1alpha1.RolloutHalt `json:"halt,omitempty"`
	ClearHalt          bool                  `json:"clearHalt,omitempty"`
	SignalPaused       *bool                 `json:"signalPaused,omitempty"`
	// SignalResumed records a resume signal given at this generation: it
	// lifts spec.rollout.paused until the spec changes.
	SignalResumed int64  `json:"signalResumed,omitempty"`
	Resume        string `json:"resume,omitempty"`
	PausedSeen    bool   `json:"pausedSeen,omitempty"`
	// Answered are the request annotations' values answered, written with
	// what they did, in the same write: an abort (Abort) or its lifting
	// (ClearAbort), the step a promote let go (PromotedStep), a promote
	// --full (PromotedFull).
	Answered     rollout.Requests      `json:"answered,omitempty"`
	Abort        *v1alpha1.RolloutHalt `json:"abort,omitempty"`
	ClearAbort   bool                  `json:"clearAbort,omitempty"`
	PromotedStep int32                 `json:"promotedStep,omitempty"`
	PromotedFull bool                  `json:"promotedFull,omitempty"`
	// AwaitingClusters, with the phase AwaitingClusters, are the clusters
	// of spec.rollout.after the first step waits for; any other phase
	// written clears them.
	AwaitingClusters []v1alpha1.RolloutAwaitedCluster `json:"awaitingClusters,omitempty"`
}

// SetRolloutStatus writes a rollout's phase and message, and its counts as
// the class's pools stand in the worker's cache (admittedPools,
// movedPools, totalPools: true at every phase, 0 included, as of the
// cache's last event; every later write of the rollout counts again). A
// config that is gone, or is another incarnation than the run's, has no
// status of the run's to write: that is no error.
func (a *Activities) SetRolloutStatus(ctx context.Context, in RolloutStatusInput) error {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return err
	}
	cache, err := a.rolloutCache()
	if err != nil {
		return err
	}
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil || c == nil || (in.UID != "" && c.UID != in.UID) {
		return err
	}
	fields := map[string]any{}
	if in.Phase != "" { // "" records a signal's request alone
		fields["phase"], fields["message"] = in.Phase, truncate(in.Message, 1024)
		fields["awaitingClusters"] = nil // written with AwaitingClusters only
		if len(in.AwaitingClusters) > 0 {
			fields["awaitingClusters"] = in.AwaitingClusters
		}
	}
	if in.WorkflowID != "" {
		fields["workflowID"] = in.WorkflowID
	}
	if in.Step != 0 {
		fields["step"] = in.Step
	}
	if in.ObservedGeneration != 0 {
		fields["observedGeneration"] = in.ObservedGeneration
	}
	adm := rollout.AdmissionOf(c)
	if in.Phase == v1alpha1.RolloutCompleted {
		adm = nil // this write completes it: every pool is admitted
	}
	if in.Clear {
		for _, f := range []string{"step", "admittedThrough", "admittedCanaries", "stepStart", "observedGeneration", "halt", "abort", "promotedStep"} {
			fields[f] = nil
		}
		fields["signalPaused"], fields["promotedFull"] = false, false
		adm = &rollout.Admission{}
	}
	switch {
	case in.Halt != nil:
		halt := *in.Halt
		halt.Message = truncate(halt.Message, 1024)
		fields["halt"] = halt
	case in.ClearHalt:
		fields["halt"] = nil
	case in.PausedSeen && c.Status.Rollout != nil && c.Status.Rollout.Halt != nil:
		seen := *c.Status.Rollout.Halt
		seen.PausedSeen = true
		fields["halt"] = seen
	}
	if in.SignalPaused != nil {
		fields["signalPaused"] = *in.SignalPaused
	}
	if in.Resume != "" {
		fields["resumeRequest"] = in.Resume
	}
	if in.SignalResumed != 0 {
		fields["signalResumedGeneration"] = in.SignalResumed
	}
	for field, value := range map[string]string{"pauseRequest": in.Answered.Pause, "resumeRequest": in.Answered.Resume,
		"promoteRequest": in.Answered.Promote, "promoteFullRequest": in.Answered.PromoteFull,
		"abortRequest": in.Answered.Abort, "retryRequest": in.Answered.Retry} {
		if value != "" {
			fields[field] = value
		}
	}
	switch {
	case in.Abort != nil:
		abort := *in.Abort
		abort.Message = truncate(abort.Message, 1024)
		fields["abort"] = abort
		adm = &rollout.Admission{Aborted: true}
	case in.ClearAbort:
		fields["abort"] = nil
		adm = rollout.StatusAdmission(c.Status.Rollout)
	}
	if in.PromotedStep > 0 {
		fields["promotedStep"] = in.PromotedStep
	}
	if in.PromotedFull {
		fields["promotedFull"] = true
	}
	counts, err := countClass(ctx, cache, c, adm)
	if err != nil {
		return err
	}
	return a.patchRolloutRaw(ctx, in.Config, c.UID, counts.into(fields))
}

// RolloutEventInput is a Warning (or Normal) event regarding a config. Key
// makes its name: a retry finds it already there.
type RolloutEventInput struct {
	Config string `json:"config"`
	UID    string `json:"uid"`
	Key    string `json:"key"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
	Note   string `json:"note"`
}

// RecordRolloutEvent records an events.k8s.io/v1 Event regarding a
// SandboxConfig, in the default namespace (a cluster-scoped object's
// events live there, where `kubectl describe sandboxconfig` finds them).
func (a *Activities) RecordRolloutEvent(ctx context.Context, in RolloutEventInput) error {
	if err := checkCaller(ctx, rolloutOf(in.Config)); err != nil {
		return err
	}
	if in.Key == "" || in.Reason == "" {
		return invalidInput("a rollout event needs a key and a reason, got %+v", in)
	}
	uid := in.UID
	if uid == "" {
		c, err := a.rollingConfig(ctx, in.Config)
		if err != nil || c == nil {
			return err
		}
		uid = string(c.UID)
	}
	return a.recorder().Record(ctx, events.Event{
		Regarding: events.Config(in.Config, types.UID(uid)), Key: in.Key,
		Type: in.Type, Reason: in.Reason, Action: "Rollout", Note: in.Note,
	})
}

func (a *Activities) rolloutStepDeadline() time.Duration {
	if a.RolloutStepDeadline > 0 {
		return a.RolloutStepDeadline
	}
	return DefaultRolloutStepDeadline
}

// rolloutCache is the worker's cache the rollout activities read pools and
// configs from. Activities built without one fail at once and for good:
// the rollout never falls back to listing the fleet live.
func (a *Activities) rolloutCache() (ctrlclient.Reader, error) {
	if a.Cache == nil {
		return nil, temporal.NewNonRetryableApplicationError("the rollout activities read the class's pools and configs from the worker's "+
			"informer cache (Activities.Cache, indexed by poolwatch.Index), and these activities were built without one", ErrNoCache, nil)
	}
	return a.Cache, nil
}

// newestDefault is the newest default of c's class: the configs as the
// worker's cache shows them, c itself as read live. A newer default the
// cache shows is read live before it is believed, and the look goes on
// from what the API server says: a cache that lags may still show a
// config that lost its annotation or was deleted, and a rollout must not
// end as superseded by it. A newer default the cache does not show yet is
// found by a later look (the starter's recheck, which it repeats while
// status says the rollout is under way; the next look of a wait). The GET
// is made only when the cache names another config than c: once per
// rollout that is superseded, never per look of one that is not.
func (a *Activities) newestDefault(ctx context.Context, cache ctrlclient.Reader, c *v1alpha1.SandboxConfig) (string, error) {
	configs, err := poolwatch.ListConfigs(ctx, cache)
	if err != nil {
		return "", fmt.Errorf("reading the SandboxConfigs of the rollout of SandboxConfig %q from the cache: %w", c.Name, err)
	}
	withLive := func(name string, live *resolve.Config) {
		configs = slices.DeleteFunc(configs, func(o resolve.Config) bool { return o.Name == name })
		if live != nil {
			configs = append(configs, *live)
		}
	}
	self := resolve.ConfigFrom(c)
	withLive(c.Name, &self)
	readLive := map[string]bool{c.Name: true}
	for {
		newest := resolve.NewestDefault(c.Class(), configs)
		if newest == "" || readLive[newest] {
			return newest, nil
		}
		readLive[newest] = true
		var o v1alpha1.SandboxConfig
		switch err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: newest}, &o); {
		case apierrors.IsNotFound(err):
			withLive(newest, nil)
		case err != nil:
			return "", fmt.Errorf("reading SandboxConfig %q, a newer default of sandbox class %q than %q: %w", newest, c.Class(), c.Name, err)
		default:
			live := resolve.ConfigFrom(&o)
			withLive(newest, &live)
		}
	}
}

// rollingConfig reads a config live; nil when it is gone.
func (a *Activities) rollingConfig(ctx context.Context, name string) (*v1alpha1.SandboxConfig, error) {
	var c v1alpha1.SandboxConfig
	switch err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: name}, &c); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading SandboxConfig %q for its rollout: %w", name, err)
	}
	return &c, nil
}

// patchRolloutRaw merge-patches status.rollout of the incarnation uid:
// idempotent, and a config gone meanwhile is no error. Each field is set as
// given (a count of 0 included; nil deletes it).
func (a *Activities) patchRolloutRaw(ctx context.Context, config string, uid types.UID, fields map[string]any) error {
	return a.patchRolloutRawAt(ctx, config, uid, "", fields)
}

// patchRolloutRawAt is patchRolloutRaw bound to a resourceVersion too (""
// for none): the API server refuses it with a conflict if the config
// changed since.
func (a *Activities) patchRolloutRawAt(ctx context.Context, config string, uid types.UID, resourceVersion string, fields map[string]any) error {
	patch := map[string]any{"status": map[string]any{"rollout": fields}}
	meta := map[string]any{}
	if uid != "" {
		// The API server refuses a patch whose uid is not the object's:
		// a config created again under the name is not written.
		meta["uid"] = uid
	}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the rollout status of SandboxConfig %q: %w", config, err)
	}
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: config}}
	err = a.Live.Status().Patch(ctx, c, ctrlclient.RawPatch(types.MergePatchType, body))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the rollout status of SandboxConfig %q (uid %s): %w", config, uid, err)
	}
	return nil
}
