// Package resolve decides which SandboxConfig each sandbox class of a
// WorkerPool should use. It is pure: the same pool and configs always give the
// same answer, so workflows can call it directly and tests can table it.
package resolve

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rollout"
)

// Pool is a pool's place in rollout order: what resolution needs to know of
// the pool itself, beside its spec and status, to tell whether a staged
// rollout admits it.
type Pool = rollout.PoolKey

// Config is what resolution needs to know of a SandboxConfig. It is small on
// purpose: it travels through workflow histories.
type Config struct {
	Name string `json:"name"`
	// Class is the config's spec.sandboxClass.
	Class v1alpha1.SandboxClass `json:"class"`
	// ClassDefault is true when the config is annotated
	// sandboxconfig.ate.dev/is-class-default: "true".
	ClassDefault bool `json:"classDefault,omitempty"`
	// Deleting is true once the config has a deletionTimestamp.
	Deleting bool `json:"deleting,omitempty"`
	// Protected is true while the config carries the protection finalizer.
	Protected bool `json:"protected,omitempty"`
	// CreatedUnix is the creation timestamp, in seconds as the API server
	// stores it.
	CreatedUnix int64 `json:"createdUnix"`
	// UID and ResourceVersion name the incarnation and the version read.
	// Only a live read (ReadConfig) sets them: a release binds its finalizer
	// removal to the incarnation its look checked (see Unprotect).
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	// Rollout is the config's staged rollout, nil without one (or once it
	// completed): as the newest class default, it admits the class's
	// unpinned pools step by step (see classDefault).
	Rollout *rollout.Admission `json:"rollout,omitempty"`
}

// ConfigFrom reduces a SandboxConfig to what resolution needs.
func ConfigFrom(c *v1alpha1.SandboxConfig) Config {
	return Config{
		Name:         c.Name,
		Class:        c.Class(),
		ClassDefault: c.IsClassDefault(),
		Deleting:     c.IsDeleting(),
		Protected:    c.IsProtected(),
		CreatedUnix:  c.CreationTimestamp.Unix(),
		Rollout:      rollout.AdmissionOf(c),
	}
}

// ConfigsFrom reduces SandboxConfigs to what resolution needs.
func ConfigsFrom(items []v1alpha1.SandboxConfig) []Config {
	configs := make([]Config, 0, len(items))
	for i := range items {
		configs = append(configs, ConfigFrom(&items[i]))
	}
	return configs
}

// Result is the resolution of one sandbox class.
type Result struct {
	Class v1alpha1.SandboxClass `json:"class"`
	// Target is the config the class's status should name: the resolved
	// config, or the one kept when resolution failed. Empty when there is
	// nothing to use and nothing may be kept.
	Target string `json:"target,omitempty"`
	// Resolved is true when the current spec is met by Target.
	Resolved bool `json:"resolved,omitempty"`
	// Reason and Message are those of the class's Resolved condition.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Class resolves one entry of spec.sandboxClasses of pool. current is the
// config the class's status names today ("" if none); configs are all
// SandboxConfigs.
func Class(pool Pool, entry v1alpha1.WorkerPoolSandboxClass, current string, configs []Config) Result {
	byName := make(map[string]*Config, len(configs))
	for i := range configs {
		byName[configs[i].Name] = &configs[i]
	}
	if entry.ConfigRef != nil {
		return pinned(entry.Name, entry.ConfigRef.Name, current, byName)
	}
	return classDefault(pool, entry.Name, current, configs, byName)
}

func pinned(class v1alpha1.SandboxClass, name, current string, byName map[string]*Config) Result {
	// The class is checked before deletion: a config of the wrong class is
	// wrong whatever its state, and saying so tells the operator what to fix.
	// A config in deletion takes no new pools; a pool already on it keeps it
	// (see keep) while the finalizer still holds it, with the problem shown.
	if ok, reason, message := CheckTarget(name, byName[name], class); !ok {
		return keep(class, current, byName, reason, message)
	}
	return resolved(class, name)
}

func classDefault(pool Pool, class v1alpha1.SandboxClass, current string, configs []Config, byName map[string]*Config) Result {
	if d := NewestDefault(class, configs); d != "" {
		return rollingOut(pool, class, current, configs, byName, byName[d])
	}
	if c, ok := byName[current]; ok && keepable(class, c) && c.Deleting {
		return keep(class, current, byName, v1alpha1.ReasonSandboxConfigDeleting,
			fmt.Sprintf("SandboxConfig %q is being deleted and no other SandboxConfig of sandbox class %q is annotated %s: \"true\"",
				current, class, v1alpha1.ClassDefaultAnnotation))
	}
	return keep(class, current, byName, v1alpha1.ReasonDefaultConfigNotFound,
		fmt.Sprintf("no SandboxConfig of sandbox class %q is annotated %s: \"true\"", class, v1alpha1.ClassDefaultAnnotation))
}

// rollingOut resolves an unpinned class whose newest default is d. Without
// a staged rollout, or once d's rollout admits the pool (or the pool is on d
// already), the class resolves to d. Until then the class stays where it
// is: honestly Resolved on its current config, with the message it had
// before d's rollout began, so that a rollout writes nothing to the pools it
// has not reached: a message naming the rollout's step made every waiting
// pool's status change at every step, N writes per step, most of them while
// the step bakes (what the pool waits for is `kubectl ate pool why`'s to
// say, from the config's status). That holds for a current config in deletion too,
// as long as it still carries the protection finalizer (keepable): the
// finalizer exists to let its pools stay, deleting the old default must not
// move every pool at once past the rollout, and the class never moves back
// to an older default meanwhile; its message says the config is being
// deleted and names the rollout it waits for (one write per pool, when the
// deletion begins), and the config is released once the rollout admitted its last
// pool and that pool moved off. A class with no config to stay on (a new
// pool, or one whose config is gone, of another class, or in deletion
// without the finalizer) resolves as if d were not a default (the previous
// default, itself maybe rolling out), and only when that finds nothing, to
// d: a pool is never left without a config because a rollout has not
// reached it.
func rollingOut(pool Pool, class v1alpha1.SandboxClass, current string, configs []Config, byName map[string]*Config, d *Config) Result {
	if d.Rollout.Admits(pool, current, d.Name) {
		return resolved(class, d.Name)
	}
	// An aborted rollout sends the pools on d back: they resolve as if d
	// were not a default, as a pool it never admitted does.
	if c, ok := byName[current]; ok && keepable(class, c) && !(current == d.Name && d.Rollout.Aborted) {
		r := resolved(class, current)
		if c.Deleting {
			r.Message = WaitingDeletingMessage(current, d.Name)
		}
		return r
	}
	rest := make([]Config, 0, len(configs))
	for _, c := range configs {
		if c.Name != d.Name {
			rest = append(rest, c)
		}
	}
	restByName := make(map[string]*Config, len(rest))
	for i := range rest {
		restByName[rest[i].Name] = &rest[i]
	}
	if r := classDefault(pool, class, current, rest, restByName); r.Resolved {
		switch {
		case d.Rollout.RolledBack:
			r.Message = RolledBackMessage(r.Target, d.Name, d.Rollout.Step)
		case d.Rollout.Aborted:
			r.Message = AbortedMessage(r.Target, d.Name, d.Rollout.Step)
		}
		return r
	}
	return resolved(class, d.Name)
}

// WaitingMessage says that a class stays on config current until the
// staged rollout of config rolling admits it. It names no step: the
// message must not change while the rollout goes on (see rollingOut).
func WaitingMessage(current, rolling string) string {
	return fmt.Sprintf("%s; waits for the rollout of SandboxConfig %q", ResolvedMessage(current), rolling)
}

// AbortedMessage is the message of the Resolved condition of a class on
// config current while the rollout of config rolling is aborted: the pools
// it admitted go back to where they came from until a retry.
func AbortedMessage(current, rolling string, step int32) string {
	return fmt.Sprintf("%s; the rollout of SandboxConfig %q was aborted at step %d", ResolvedMessage(current), rolling, step)
}

// RolledBackMessage is the message of the Resolved condition of a class
// on config current while the rollout of config rolling is rolled back:
// a step failed, and the pools it admitted go back to where they came from
// until a retry or a new spec.
func RolledBackMessage(current, rolling string, step int32) string {
	return fmt.Sprintf("%s; the rollout of SandboxConfig %q rolled back at step %d", ResolvedMessage(current), rolling, step)
}

// WaitingDeletingMessage is the message of the Resolved condition of a
// class whose config current is in deletion: it stays on it, protected,
// until the rollout of rolling admits it, and the config is released once
// it moved off.
func WaitingDeletingMessage(current, rolling string) string {
	return fmt.Sprintf("%s; SandboxConfig %q is being deleted", WaitingMessage(current, rolling), current)
}

// NewestDefault returns the newest class default that is not being deleted;
// on equal creation timestamps (one-second resolution) the name that sorts
// first, so every resolver agrees on the same answer. It is what every
// unpinned class resolves to; "" when there is none.
func NewestDefault(class v1alpha1.SandboxClass, configs []Config) string {
	var candidates []Config
	for _, c := range configs {
		if c.Class == class && c.ClassDefault && !c.Deleting {
			candidates = append(candidates, c)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	sort.Slice(candidates, func(i, j int) bool {
		if candidates[i].CreatedUnix != candidates[j].CreatedUnix {
			return candidates[i].CreatedUnix > candidates[j].CreatedUnix
		}
		return candidates[i].Name < candidates[j].Name
	})
	return candidates[0].Name
}

func resolved(class v1alpha1.SandboxClass, name string) Result {
	return Result{
		Class:    class,
		Target:   name,
		Resolved: true,
		Reason:   v1alpha1.ReasonResolved,
		Message:  ResolvedMessage(name),
	}
}

// keep reports a failed resolution. The class keeps the config its status
// names while that config still exists, is of the class and, if in deletion,
// still carries the finalizer: a running pool never loses its config because
// the spec cannot be met. A config in deletion without the finalizer is about
// to vanish and is not kept.
func keep(class v1alpha1.SandboxClass, current string, byName map[string]*Config, reason, message string) Result {
	r := Result{Class: class, Reason: reason, Message: message}
	if c, ok := byName[current]; ok && keepable(class, c) {
		r.Target = current
		r.Message = Keeping(message, current)
	}
	return r
}

func keepable(class v1alpha1.SandboxClass, c *Config) bool {
	return c.Class == class && (!c.Deleting || c.Protected)
}
