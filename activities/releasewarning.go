package activities

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

// RolloutWait is what holds a config in deletion on a staged rollout: the
// class default Rolling whose rollout, at Step, has not admitted Pools of
// the pools still on the config (they stay on it, Resolved, until it
// does: internal/resolve).
type RolloutWait struct {
	Rolling string
	Step    int32
	Pools   int
}

// DeletingWarningNote is the note of the SandboxConfigDeleting Warning
// about a config in deletion whose pools wait for a rollout: the
// condition's message a switch to it reads (resolve.CheckTarget), then
// the wait.
func DeletingWarningNote(config string, class v1alpha1.SandboxClass, w RolloutWait) string {
	_, _, deleting := resolve.CheckTarget(config, &resolve.Config{Name: config, Class: class, Deleting: true}, class)
	pools := "pools wait"
	if w.Pools == 1 {
		pools = "pool waits"
	}
	return fmt.Sprintf("%s; %d %s for the rollout of SandboxConfig %q (step %d)", deleting, w.Pools, pools, w.Rolling, w.Step)
}

// DeletingWarningName is the name of the SandboxConfigDeleting Warning of
// one incarnation (uid) of a config for one step of one rollout: a release
// that looks again (a recheck, its fallback timer, a retried look after a
// crash, another worker) while the same rollout is at the same step
// creates the same event, which exists already; the next step, or another
// rollout, is a new Warning.
func DeletingWarningName(config, uid string, w RolloutWait) string {
	return events.Name(events.Config(config, types.UID(uid)), w.key())
}

// key is the occurrence of the Warning: this step of this rollout (the
// config's incarnation is the event's object).
func (w RolloutWait) key() string { return fmt.Sprintf("deleting/rollout/%s/%d", w.Rolling, w.Step) }

// rolloutWait tells, from the worker's cache, whether the users of a
// config in deletion (pools, the cache's own objects) are held by a
// staged rollout: how many of them stay on it because the newest default
// of its class rolls out and has not admitted them. nil when none is.
func rolloutWait(c *v1alpha1.SandboxConfig, pools []v1alpha1.WorkerPool, configs []resolve.Config) *RolloutWait {
	class := c.Class()
	d := resolve.NewestDefault(class, configs)
	if d == "" {
		return nil
	}
	var rolling *resolve.Config
	for i := range configs {
		if configs[i].Name == d {
			rolling = &configs[i]
		}
	}
	if rolling == nil || rolling.Rollout == nil {
		return nil
	}
	w := &RolloutWait{Rolling: d, Step: rolling.Rollout.Step}
	for i := range pools {
		p := &pools[i]
		for _, entry := range p.Spec.SandboxClasses {
			if entry.Name != class || entry.ConfigRef != nil {
				continue
			}
			plan := resolve.PlanClass(rollout.KeyOf(p), entry, &p.Status, configs)
			if plan.Current == c.Name && plan.Result.Resolved && plan.Result.Target == c.Name {
				w.Pools++
			}
		}
	}
	if w.Pools == 0 {
		return nil
	}
	return w
}

// warnDeletingWaits records, once per step of the rollout, a Warning
// SandboxConfigDeleting regarding a config in deletion whose pools wait
// for a staged rollout, naming it: `kubectl describe sandboxconfig` then
// says why the config stays Terminating. It reads the config itself live
// (the release's look follows its deletion mark at once, which the cache
// may not show yet) and the rest from the worker's cache, and is best
// effort: the release must not wait on an event, so a failure is logged
// and the next look records it.
func (a *Activities) warnDeletingWaits(ctx context.Context, config string, pools []v1alpha1.WorkerPool) {
	reader := a.Cache
	if a.Live != nil {
		reader = a.Live
	}
	var c v1alpha1.SandboxConfig
	if err := reader.Get(ctx, ctrlclient.ObjectKey{Name: config}, &c); err != nil || !c.IsDeleting() {
		return
	}
	configs, err := poolwatch.ListConfigs(ctx, a.Cache)
	if err != nil {
		a.logger(ctx).Warn("could not tell whether a rollout holds the pools of a SandboxConfig in deletion", "config", config, "error", err.Error())
		return
	}
	configs = slices.DeleteFunc(configs, func(x resolve.Config) bool { return x.Name == config })
	configs = append(configs, resolve.ConfigFrom(&c))
	w := rolloutWait(&c, pools, configs)
	if w == nil || a.Clientset == nil {
		return
	}
	ev := events.Event{
		Regarding: events.Config(config, c.UID), Key: w.key(),
		Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonSandboxConfigDeleting, Action: "Release",
		Note: DeletingWarningNote(config, c.Class(), *w),
	}
	if err := a.recorder().Record(ctx, ev); err != nil {
		a.logger(ctx).Warn("could not record the Warning of a SandboxConfig in deletion that waits for a rollout; the next look records it",
			"config", config, "rolling", w.Rolling, "step", w.Step, "event", ev.Name(), "error", err.Error())
	}
}
