package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
	"ate.dev/orchestrator/internal/wfapi"
)

// The rollout workflow's activities (workflows/rollout.go): a look at the
// config and its class's pools, the admission of a step (the one write that
// lets pools move), the wait for the admitted pools, and the config's
// status and Warning events. Each acts only on the config the calling
// workflow's ID names.
//
// +kubebuilder:rbac:groups=ate.dev,resources=sandboxconfigs/status,verbs=get;patch

// DefaultRolloutStepDeadline is how long a step's admitted pools may take
// to move and be Available before the rollout halts, when the worker's
// setting is unset.
const DefaultRolloutStepDeadline = 30 * time.Minute

// rolloutPollInterval is how often WaitRolloutStep looks at the pools.
const rolloutPollInterval = time.Second

// RolloutLook is what a rollout decides its next step on, all read live.
type RolloutLook struct {
	// Stop, when set, ends the rollout with this phase and StopMessage:
	// Completed (status says so), Superseded (a newer class default) or
	// Stopped (gone, in deletion, no longer a default, or spec.rollout
	// removed).
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
}

// LookAtRollout reads a rolling-out config, the other configs and the
// class's unpinned pools.
func (a *Activities) LookAtRollout(ctx context.Context, in wfapi.RolloutInput) (*RolloutLook, error) {
	if err := checkRolloutCaller(ctx, in.Config); err != nil {
		return nil, err
	}
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil || c == nil {
		return &RolloutLook{Stop: v1alpha1.RolloutStopped, StopMessage: fmt.Sprintf("SandboxConfig %q is gone", in.Config)}, err
	}
	look := &RolloutLook{Exists: true, Generation: c.Generation, Deadline: a.rolloutStepDeadline()}
	if c.Status.Rollout != nil {
		look.Status = *c.Status.Rollout
	}
	if r := c.Spec.Rollout; r != nil {
		look.Paused, look.Steps = r.Paused, int32(len(r.Steps))
	}
	var configs v1alpha1.SandboxConfigList
	if err := a.Live.List(ctx, &configs); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs for the rollout of SandboxConfig %q: %w", in.Config, err)
	}
	look.Stop, look.StopMessage = stopOf(c, resolve.ConfigsFrom(configs.Items))
	if look.Stop != "" {
		return look, nil
	}
	pools, err := rollout.ClassPools(ctx, a.Live, c.Class())
	if err != nil {
		return nil, err
	}
	look.Plan = PlanOf(c, rollout.Plain(pools))
	return look, nil
}

// stopOf says whether a config's rollout is over, and why.
func stopOf(c *v1alpha1.SandboxConfig, configs []resolve.Config) (v1alpha1.RolloutPhase, string) {
	switch newest := resolve.NewestDefault(c.Class(), configs); {
	case c.IsDeleting():
		return v1alpha1.RolloutStopped, fmt.Sprintf("SandboxConfig %q is being deleted", c.Name)
	case !c.IsClassDefault():
		return v1alpha1.RolloutStopped, fmt.Sprintf("SandboxConfig %q is no longer annotated %s: \"true\"; its pools follow the class default again", c.Name, v1alpha1.ClassDefaultAnnotation)
	case c.Spec.Rollout == nil:
		return v1alpha1.RolloutStopped, "spec.rollout was removed: every unpinned pool of the class follows the config at once"
	case c.Status.Rollout != nil && c.Status.Rollout.Phase == v1alpha1.RolloutCompleted:
		return v1alpha1.RolloutCompleted, c.Status.Rollout.Message
	case newest != c.Name:
		return v1alpha1.RolloutSuperseded, fmt.Sprintf("superseded by SandboxConfig %q, a newer default of sandbox class %q", newest, c.Class())
	}
	return "", ""
}

// PlanOf is the plan of a config's rollout over pools (in rollout order):
// the pools admitted so far, and those each remaining step would admit.
// A config without spec.rollout moves every pool in one step.
func PlanOf(c *v1alpha1.SandboxConfig, pools []rollout.Pool) wfapi.RolloutPlan {
	steps := []v1alpha1.RolloutStep{{}}
	if c.Spec.Rollout != nil {
		steps = c.Spec.Rollout.Steps
	}
	plan := wfapi.RolloutPlan{Config: c.Name, Total: len(pools), Moved: []string{}}
	var through *rollout.PoolKey
	if st := c.Status.Rollout; st != nil {
		plan.Phase, plan.Step, plan.Message = string(st.Phase), st.Step, st.Message
		through = rollout.KeyOfRef(st.AdmittedThrough)
	}
	admitted, planned := rollout.Plan(pools, c.Name, steps, plan.Step+1, through)
	plan.Admitted = append([]string{}, admitted...)
	for _, p := range pools {
		if p.Current == c.Name {
			plan.Moved = append(plan.Moved, p.Key.String())
		}
	}
	plan.Steps = []wfapi.RolloutPlanStep{}
	for _, s := range planned {
		plan.Steps = append(plan.Steps, wfapi.RolloutPlanStep{Step: s.Step, Want: s.Want, Pools: s.Pools})
	}
	return plan
}

// AdmitInput asks for a step's admission. Prev is the last pool admitted
// before the step, as the workflow knows it: the step's pools are those
// after it.
type AdmitInput struct {
	Config     string           `json:"config"`
	Step       int32            `json:"step"`
	Prev       *rollout.PoolKey `json:"prev,omitempty"`
	WorkflowID string           `json:"workflowID"`
	Generation int64            `json:"generation,omitempty"`
}

// Admitted is a step's admission.
type Admitted struct {
	// Gone is true when the config is gone: the workflow looks again.
	Gone bool `json:"gone,omitempty"`
	// Through is the last pool admitted; Pools the pools the step admitted
	// (after Prev), in order.
	Through  *rollout.PoolKey `json:"through,omitempty"`
	Pools    []string         `json:"pools"`
	Want     int              `json:"want"`
	Admitted int              `json:"admitted"`
	Total    int              `json:"total"`
	// Pause is the step's bake time; Gate its gate, if any.
	Pause time.Duration         `json:"pause,omitempty"`
	Gate  *v1alpha1.RolloutGate `json:"gate,omitempty"`
}

// AdmitRolloutStep admits the pools of a step: it writes status.rollout with
// the step and the last admitted pool, which the starter and every
// resolver read. Admission only grows (rollout.Advance), so a step run
// again after a crash admits what it admitted before and nothing back.
func (a *Activities) AdmitRolloutStep(ctx context.Context, in AdmitInput) (*Admitted, error) {
	if err := checkRolloutCaller(ctx, in.Config); err != nil {
		return nil, err
	}
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil || c == nil {
		return &Admitted{Gone: true}, err
	}
	if c.Spec.Rollout == nil || in.Step < 1 || int(in.Step) > len(c.Spec.Rollout.Steps) {
		return &Admitted{Gone: true}, nil // spec changed under the workflow: it looks again
	}
	step := c.Spec.Rollout.Steps[in.Step-1]
	pools, err := rollout.ClassPools(ctx, a.Live, c.Class())
	if err != nil {
		return nil, err
	}
	plain := rollout.Plain(pools)
	prev := in.Prev
	if st := c.Status.Rollout; st != nil {
		if k := rollout.KeyOfRef(st.AdmittedThrough); k != nil && (prev == nil || prev.Less(*k)) {
			prev = k
		}
	}
	res := &Admitted{Want: rollout.Want(step, len(plain)), Total: len(plain), Gate: c.Spec.Rollout.Gate, Pools: []string{}}
	if step.Pause != nil {
		res.Pause = step.Pause.Duration
	}
	res.Through, res.Admitted = rollout.Advance(plain, c.Name, res.Want, prev)
	for _, p := range plain {
		if p.Key.NotAfterOrNil(res.Through) && !p.Key.NotAfterOrNil(in.Prev) {
			res.Pools = append(res.Pools, p.Key.String())
		}
	}
	_, moved := rollout.Count(plain, c.Name, &rollout.Admission{Through: res.Through})
	st := v1alpha1.RolloutStatus{
		Phase: v1alpha1.RolloutProgressing, Step: in.Step, AdmittedPools: int32(res.Admitted), MovedPools: int32(moved),
		TotalPools: int32(res.Total), WorkflowID: in.WorkflowID, AdmittedThrough: rollout.RefOf(res.Through),
		ObservedGeneration: in.Generation,
		Message: fmt.Sprintf("step %d of %d: %d of %d pools admitted; waiting for them to move and be Available",
			in.Step, len(c.Spec.Rollout.Steps), res.Admitted, res.Total),
	}
	if err := a.patchRolloutStatus(ctx, c.Name, &st); err != nil {
		return nil, err
	}
	return res, nil
}

// WaitInput asks WaitRolloutStep to wait for a step's admitted pools until
// Deadline.
type WaitInput struct {
	Config   string    `json:"config"`
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
}

// WaitRolloutStep polls, heartbeating, until every pool the rollout admits
// is on the config with its Available condition True (Ready); until one's
// switch fails (its class shows SwitchStepFailing, or Resolved False: a roll
// back, since the step was admitted), or the deadline passes with one not there (Halted); or until the
// config is no longer the rollout's to run (LookAgain). It keeps
// status.rollout.movedPools current as pools move.
func (a *Activities) WaitRolloutStep(ctx context.Context, in WaitInput) (*StepWait, error) {
	if err := checkRolloutCaller(ctx, in.Config); err != nil {
		return nil, err
	}
	lastMoved := -1
	for {
		res, err := a.lookAtStep(ctx, in)
		if err != nil {
			return nil, err
		}
		if res.Outcome != "" {
			return res, nil
		}
		if res.Moved != lastMoved {
			lastMoved = res.Moved
			if err := a.patchRolloutStatus(ctx, in.Config, &v1alpha1.RolloutStatus{MovedPools: int32(res.Moved)}); err != nil {
				return nil, err
			}
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, res.Moved)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(rolloutPollInterval):
		}
	}
}

// lookAtStep is one look of WaitRolloutStep: an Outcome when the wait is
// over, else the pools moved so far.
func (a *Activities) lookAtStep(ctx context.Context, in WaitInput) (*StepWait, error) {
	c, err := a.rollingConfig(ctx, in.Config)
	if err != nil {
		return nil, err
	}
	if c == nil || c.IsDeleting() || !c.IsClassDefault() || c.Spec.Rollout == nil {
		return &StepWait{Outcome: StepLookAgain}, nil
	}
	var configs v1alpha1.SandboxConfigList
	if err := a.Live.List(ctx, &configs); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs for the rollout of SandboxConfig %q: %w", in.Config, err)
	}
	if resolve.NewestDefault(c.Class(), resolve.ConfigsFrom(configs.Items)) != c.Name {
		return &StepWait{Outcome: StepLookAgain}, nil
	}
	pools, err := rollout.ClassPools(ctx, a.Live, c.Class())
	if err != nil {
		return nil, err
	}
	adm := rollout.AdmissionOf(c)
	late := time.Now().After(in.Deadline)
	res := &StepWait{}
	var waiting *StepWait
	for _, p := range pools {
		if p.Current == c.Name {
			res.Moved++
		}
		if !adm.Admits(p.Key, p.Current, c.Name) {
			continue
		}
		switch {
		case p.Current != c.Name && p.Failing != "" && !p.FailingSince.Before(in.Since.Truncate(time.Second)):
			return &StepWait{Outcome: StepHalted, Pool: p.Key.String(), Moved: res.Moved,
				Message: fmt.Sprintf("the switch of WorkerPool %s to SandboxConfig %q failed: %s", p.Key, c.Name, p.Failing)}, nil
		case waiting != nil:
		case p.Current != c.Name || p.Pending != "":
			waiting = &StepWait{Pool: p.Key.String(), Message: fmt.Sprintf("WorkerPool %s has not moved to SandboxConfig %q (its status names %q)", p.Key, c.Name, p.Current)}
		case !p.Available:
			waiting = &StepWait{Pool: p.Key.String(), Message: fmt.Sprintf("WorkerPool %s is not Available: %s", p.Key, p.AvailableMessage)}
		}
	}
	switch {
	case waiting == nil:
		res.Outcome = StepReady
	case late:
		res.Outcome, res.Pool = StepHalted, waiting.Pool
		res.Message = fmt.Sprintf("step %d not done by its deadline: %s", in.Step, waiting.Message)
	}
	return res, nil
}

// RolloutStatusInput is a write of status.rollout's phase and message.
// Clear also drops the admission (a rollout stopped because its config is
// no longer a default starts over if it becomes one again).
type RolloutStatusInput struct {
	Config             string                `json:"config"`
	Phase              v1alpha1.RolloutPhase `json:"phase"`
	Message            string                `json:"message"`
	Step               int32                 `json:"step,omitempty"`
	WorkflowID         string                `json:"workflowID,omitempty"`
	ObservedGeneration int64                 `json:"observedGeneration,omitempty"`
	Clear              bool                  `json:"clear,omitempty"`
}

// SetRolloutStatus writes a rollout's phase and message. A config that is
// gone has no status to write: that is no error.
func (a *Activities) SetRolloutStatus(ctx context.Context, in RolloutStatusInput) error {
	if err := checkRolloutCaller(ctx, in.Config); err != nil {
		return err
	}
	st := &v1alpha1.RolloutStatus{Phase: in.Phase, Message: truncate(in.Message, 1024), Step: in.Step,
		WorkflowID: in.WorkflowID, ObservedGeneration: in.ObservedGeneration}
	if in.Clear {
		return a.patchRolloutRaw(ctx, in.Config, map[string]any{"phase": in.Phase, "message": st.Message, "step": nil,
			"admittedPools": nil, "admittedThrough": nil, "workflowID": in.WorkflowID, "observedGeneration": nil})
	}
	return a.patchRolloutStatus(ctx, in.Config, st)
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

// Event reasons of a rollout.
const (
	EventReasonRolloutHalted = "RolloutHalted"
)

// RecordRolloutEvent records an events.k8s.io/v1 Event regarding a
// SandboxConfig, in the default namespace (a cluster-scoped object's
// events live there, where `kubectl describe sandboxconfig` finds them).
func (a *Activities) RecordRolloutEvent(ctx context.Context, in RolloutEventInput) error {
	if err := checkRolloutCaller(ctx, in.Config); err != nil {
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
	sum := sha256.Sum256([]byte(uid + "/" + in.Key))
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: in.Config + "." + hex.EncodeToString(sum[:8]), Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NowMicro(),
		ReportingController: ReportingController,
		ReportingInstance:   a.Instance,
		Action:              "Rollout",
		Reason:              in.Reason,
		Note:                truncate(in.Note, 1024),
		Type:                in.Type,
		Regarding: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxConfig", Name: in.Config, UID: types.UID(uid),
		},
	}
	_, err := a.Clientset.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording %s event on SandboxConfig %q: %w", in.Reason, in.Config, err)
	}
	return nil
}

func (a *Activities) rolloutStepDeadline() time.Duration {
	if a.RolloutStepDeadline > 0 {
		return a.RolloutStepDeadline
	}
	return DefaultRolloutStepDeadline
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

// patchRolloutStatus merges the set fields of st into status.rollout.
func (a *Activities) patchRolloutStatus(ctx context.Context, config string, st *v1alpha1.RolloutStatus) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding the rollout status of SandboxConfig %q: %w", config, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("encoding the rollout status of SandboxConfig %q: %w", config, err)
	}
	return a.patchRolloutRaw(ctx, config, fields)
}

// patchRolloutRaw merge-patches status.rollout: idempotent, and a config
// gone meanwhile is no error.
func (a *Activities) patchRolloutRaw(ctx context.Context, config string, fields map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"rollout": fields}})
	if err != nil {
		return fmt.Errorf("encoding the rollout status of SandboxConfig %q: %w", config, err)
	}
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: config}}
	err = a.Live.Status().Patch(ctx, c, ctrlclient.RawPatch(types.MergePatchType, body))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the rollout status of SandboxConfig %q: %w", config, err)
	}
	return nil
}

// checkRolloutCaller refuses, as no retry can fix it, a rollout activity
// asked by a workflow whose ID is not the config's rollout ID.
func checkRolloutCaller(ctx context.Context, config string) error {
	if config == "" {
		return invalidInput("a rollout activity names its SandboxConfig")
	}
	if !activity.IsActivity(ctx) {
		return nil
	}
	if err := wfapi.CheckRolloutID(activity.GetInfo(ctx).WorkflowExecution.ID, config); err != nil {
		return invalidInput("%v", err)
	}
	return nil
}
