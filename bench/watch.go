package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
)

// watcher follows the pools, their events and the configs through one
// watch each, so the bench's waiting costs the API server no requests per
// poll.
type watcher struct {
	mu sync.Mutex
	// warm: the pool names the old default, Resolved, with its
	// Deployment's fields in status (the product's first pass is done).
	warm map[string]bool
	// switched: when the pool's status first named the new default with
	// Resolved True and no pending claim.
	switched map[string]time.Time
	// eventAt: when the pool's SandboxConfigSwitched event to the new
	// default appeared; events counts them (one per pool is right).
	eventAt map[string]time.Time
	events  int
	// goneAt: when the old default was deleted from the API server.
	goneAt time.Time
}

func key(ns, name string) string { return ns + "/" + name }

func startWatcher(ctx context.Context, cfg *rest.Config) (*watcher, error) {
	w := &watcher{warm: map[string]bool{}, switched: map[string]time.Time{}, eventAt: map[string]time.Time{}}
	c, err := cache.New(cfg, cache.Options{Scheme: kube.Scheme})
	if err != nil {
		return nil, err
	}
	add := func(obj client.Object, h toolscache.ResourceEventHandlerFuncs) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(h)
		return err
	}
	if err := add(&v1alpha1.WorkerPool{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.pool(o) },
		UpdateFunc: func(_, o any) { w.pool(o) },
	}); err != nil {
		return nil, err
	}
	if err := add(&eventsv1.Event{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { w.event(o) },
	}); err != nil {
		return nil, err
	}
	if err := add(&v1alpha1.SandboxConfig{}, toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if c, ok := o.(*v1alpha1.SandboxConfig); ok && c.Name == oldDefault {
				w.mu.Lock()
				w.goneAt = time.Now()
				w.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the bench's watches did not sync: %w", context.Cause(ctx))
	}
	return w, nil
}

func (w *watcher) pool(o any) {
	p, ok := o.(*v1alpha1.WorkerPool)
	if !ok {
		return
	}
	now := time.Now()
	k := key(p.Namespace, p.Name)
	st := p.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	if st == nil || st.ConfigRef == nil || st.PendingConfigRef != nil {
		return
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
	resolved := c != nil && c.Status == "True" && c.ObservedGeneration == p.Generation
	w.mu.Lock()
	defer w.mu.Unlock()
	switch st.ConfigRef.Name {
	case oldDefault:
		w.warm[k] = resolved && p.Status.ObservedGeneration == p.Generation && p.Status.Selector != ""
	case newDefault:
		if _, seen := w.switched[k]; resolved && !seen {
			w.switched[k] = now
		}
	}
}

func (w *watcher) event(o any) {
	ev, ok := o.(*eventsv1.Event)
	if !ok || ev.Reason != v1alpha1.EventReasonSandboxConfigSwitched || ev.Regarding.Kind != "WorkerPool" ||
		!strings.HasSuffix(ev.Note, fmt.Sprintf("to %q", newDefault)) {
		return
	}
	now := time.Now()
	k := key(ev.Regarding.Namespace, ev.Regarding.Name)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if _, seen := w.eventAt[k]; !seen {
		w.eventAt[k] = now
	}
}

func (w *watcher) counts() (warm, switched, events int, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ok := range w.warm {
		if ok {
			warm++
		}
	}
	return warm, len(w.switched), len(w.eventAt), !w.goneAt.IsZero()
}

// lastTimes returns when the last pool switched and when the last event
// appeared.
func (w *watcher) lastTimes() (switched, event, gone time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.switched {
		if t.After(switched) {
			switched = t
		}
	}
	for _, t := range w.eventAt {
		if t.After(event) {
			event = t
		}
	}
	return switched, event, w.goneAt
}

// until polls cond (in memory) every 20 ms until it holds.
func until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return nil
		}
		last = state
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; last: %s", what, context.Cause(ctx), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
