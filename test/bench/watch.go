package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
)

// watcher follows the pools, their events and the configs through one
// watch each, so the bench's waiting costs the API server no requests per
// poll. It follows every wave: the product's and the plain reconciler's,
// each to a config of its own.
type watcher struct {
	mu sync.Mutex
	// warm: the pool names the old default, Resolved, with its
	// Deployment's fields in status (as the API floor and the provisioning
	// left it).
	warm map[string]bool
	// switched[config][pool]: when the pool's status first named config
	// with Resolved True (at the pool's generation) and no pending claim.
	switched map[string]map[string]time.Time
	// eventAt[config][pool]: when the pool's first SandboxConfigSwitched
	// event to config appeared; events[config] counts them all (one per
	// pool is right).
	eventAt map[string]map[string]time.Time
	events  map[string]int
	// perPool[config][pool]: SandboxConfigSwitched events to config by the
	// pool they regard (the correctness check wants exactly one each).
	perPool map[string]map[string]int
	// current[pool]: the config the pool's status names now (Resolved,
	// no pending claim), for the correctness check.
	current map[string]string
	// goneAt[config]: when config was deleted from the API server.
	goneAt map[string]time.Time
	// readyReplicas[pool]: the pool's status.readyReplicas, once its status
	// is of its generation (-pod-replicas).
	readyReplicas map[string]int32
	// available[pool]: the pool's Available condition is True (a staged
	// rollout's step waits for it).
	available map[string]bool
	// switchedRV[config][pool]: the resourceVersion of the pool's update
	// recorded in switched (the staged rollouts' check orders it against
	// the config's status writes).
	switchedRV map[string]map[string]uint64
	// named[pool]: the config the pool's status last named, Resolved, no
	// claim; moves[config][pool]: how many times that became config from
	// another (one per pool and rollout is right).
	named map[string]string
	moves map[string]map[string]int
	// rollouts[config]: every change of the config's status.rollout that
	// the watch saw, in order (rollout.go).
	rollouts map[string][]rolloutMark
}

func key(ns, name string) string { return ns + "/" + name }

func startWatcher(ctx context.Context, cfg *rest.Config) (*watcher, error) {
	w := &watcher{
		warm:     map[string]bool{},
		switched: map[string]map[string]time.Time{},
		eventAt:  map[string]map[string]time.Time{},
		events:   map[string]int{},
		perPool:  map[string]map[string]int{},
		current:  map[string]string{},
		goneAt:   map[string]time.Time{},

		readyReplicas: map[string]int32{},
		available:     map[string]bool{},
		switchedRV:    map[string]map[string]uint64{},
		named:         map[string]string{},
		moves:         map[string]map[string]int{},
		rollouts:      map[string][]rolloutMark{},
	}
	c, err := cache.New(cfg, cache.Options{Scheme: kube.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the bench's watch cache: %w", err)
	}
	add := func(obj client.Object, h toolscache.ResourceEventHandlerFuncs) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
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
		AddFunc:    func(o any) { w.config(o) },
		UpdateFunc: func(_, o any) { w.config(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if c, ok := o.(*v1alpha1.SandboxConfig); ok {
				w.mu.Lock()
				w.goneAt[c.Name] = time.Now()
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
	avail := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionAvailable)
	w.mu.Lock()
	if p.Status.ObservedGeneration == p.Generation {
		w.readyReplicas[k] = p.Status.ReadyReplicas
	}
	w.available[k] = avail != nil && avail.Status == metav1.ConditionTrue
	w.mu.Unlock()
	st := p.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	if st == nil || st.ConfigRef == nil || st.PendingConfigRef != nil {
		w.mu.Lock()
		delete(w.current, k) // on no config, or claiming another
		w.mu.Unlock()
		return
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
	resolved := c != nil && c.Status == "True" && c.ObservedGeneration == p.Generation
	w.mu.Lock()
	defer w.mu.Unlock()
	name := st.ConfigRef.Name
	if resolved {
		w.current[k] = name
		if w.named[k] != name {
			w.named[k] = name
			if w.moves[name] == nil {
				w.moves[name] = map[string]int{}
			}
			w.moves[name][k]++
		}
	} else {
		delete(w.current, k)
	}
	if name == oldDefault {
		w.warm[k] = resolved && p.Status.ObservedGeneration == p.Generation && p.Status.Selector != ""
		return
	}
	if !resolved {
		return
	}
	if _, seen := w.switched[name][k]; !seen {
		if w.switchedRV[name] == nil {
			w.switchedRV[name] = map[string]uint64{}
		}
		w.switchedRV[name][k] = resourceVersion(p.ResourceVersion)
	}
	markFirst(w.switched, name, k, now)
}

// resourceVersion reads a resourceVersion as a number: etcd's revision,
// one counter over every object of the one etcd the bench runs, so two
// objects' updates can be put in order (0 if it is not a number).
func resourceVersion(rv string) uint64 {
	v, _ := strconv.ParseUint(rv, 10, 64)
	return v
}

// markFirst records now as when pool k first reached config, if it had not.
func markFirst(m map[string]map[string]time.Time, config, k string, now time.Time) {
	if m[config] == nil {
		m[config] = map[string]time.Time{}
	}
	if _, seen := m[config][k]; !seen {
		m[config][k] = now
	}
}

// switchedTo returns the config a SandboxConfigSwitched note names as the
// one the class moved to: the product's and the plain reconciler's notes
// end in `to "<config>"`.
func switchedTo(note string) (string, bool) {
	i := strings.LastIndex(note, " to ")
	if i < 0 {
		return "", false
	}
	name, err := strconv.Unquote(note[i+len(" to "):])
	return name, err == nil
}

func (w *watcher) event(o any) {
	ev, ok := o.(*eventsv1.Event)
	if !ok || ev.Reason != v1alpha1.EventReasonSandboxConfigSwitched || ev.Regarding.Kind != "WorkerPool" {
		return
	}
	to, ok := switchedTo(ev.Note)
	if !ok {
		return
	}
	now := time.Now()
	k := key(ev.Regarding.Namespace, ev.Regarding.Name)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events[to]++
	if w.perPool[to] == nil {
		w.perPool[to] = map[string]int{}
	}
	w.perPool[to][k]++
	markFirst(w.eventAt, to, k, now)
}

// readyCount is how many pools' status shows want ready replicas, at
// their generation.
func (w *watcher) readyCount(want int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.readyReplicas {
		if r == want {
			n++
		}
	}
	return n
}

// availableCount is how many pools' Available condition is True.
func (w *watcher) availableCount() int { return w.countTrue(w.available) }

// warmCount is the number of pools on the old default, resolved and served.
func (w *watcher) warmCount() int { return w.countTrue(w.warm) }

// countTrue counts the pools m holds true, under the watcher's lock.
func (w *watcher) countTrue(m map[string]bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ok := range m {
		if ok {
			n++
		}
	}
	return n
}

// wave returns how many pools name config and how many have its event.
func (w *watcher) wave(config string) (switched, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.switched[config]), len(w.eventAt[config])
}

// eventsTo counts every SandboxConfigSwitched event to config, duplicates
// included.
func (w *watcher) eventsTo(config string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[config]
}

// check is the correctness check of a wave to config over n pools, with
// old deleted before or during it: see checkWave.
func (w *watcher) check(config, old string, n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, gone := w.goneAt[old]
	return checkWave(config, old, n, w.current, w.perPool[config], gone)
}

// checkWave says what is wrong after a wave of n pools to config: a pool
// whose status does not name it, a pool with other than exactly one
// SandboxConfigSwitched event to it (events counted by the object they
// regard), and old still there. Nothing wrong is an empty list.
func checkWave(config, old string, n int, current map[string]string, events map[string]int, oldGone bool) []string {
	var out []string
	var elsewhere []string
	for pool, c := range current {
		if c != config {
			elsewhere = append(elsewhere, pool+" on "+c)
		}
	}
	if on := len(current) - len(elsewhere); on != n || len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		out = append(out, fmt.Sprintf("%d of %d pools on %s (Resolved, no claim); others: %s", on, n, config, firstFew(elsewhere)))
	}
	var wrong []string
	for pool, c := range events {
		if c != 1 {
			wrong = append(wrong, fmt.Sprintf("%s has %d", pool, c))
		}
	}
	if len(events) != n || len(wrong) > 0 {
		slices.Sort(wrong)
		out = append(out, fmt.Sprintf("%d of %d pools have %s events to %s; not exactly one: %s",
			len(events), n, v1alpha1.EventReasonSandboxConfigSwitched, config, firstFew(wrong)))
	}
	if !oldGone {
		out = append(out, fmt.Sprintf("the old default %s is not gone after its deletion", old))
	}
	return out
}

// firstFew lists at most 5 of xs, and how many more there are.
func firstFew(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	if len(xs) > 5 {
		return fmt.Sprintf("%s and %d more", strings.Join(xs[:5], ", "), len(xs)-5)
	}
	return strings.Join(xs, ", ")
}

// awaitGone waits until config is deleted, and returns when it was.
func (w *watcher) awaitGone(ctx context.Context, config string, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := until(ctx, timeout, config+" to be gone", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		t, gone := w.goneAt[config]
		at = t
		return gone, "still there"
	})
	return at, err
}

// at returns when the fraction q of the pools that named config had done
// so, and when that fraction of its events had appeared (q = 1: the last).
func (w *watcher) at(config string, q float64) (switched, event time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	quantile := func(m map[string]time.Time) time.Time {
		ts := slices.SortedFunc(maps.Values(m), time.Time.Compare)
		if len(ts) == 0 {
			return time.Time{}
		}
		return ts[min(len(ts)-1, int(math.Ceil(q*float64(len(ts))))-1)]
	}
	return quantile(w.switched[config]), quantile(w.eventAt[config])
}

// waveTimes is how long a wave to a new default took, from its creation:
// Seconds until every pool's status named it (Resolved True, no claim;
// StatusSeconds) and every pool had its SandboxConfigSwitched event
// (EventsSeconds), whichever was later; Half and P90 when half and 90 %
// of the pools named it (a wave that stalls shows in how they compare
// with StatusSeconds).
type waveTimes struct {
	Seconds       float64 `json:"seconds"`
	StatusSeconds float64 `json:"status_seconds"`
	EventsSeconds float64 `json:"events_seconds"`
	HalfSeconds   float64 `json:"half_switched_seconds"`
	P90Seconds    float64 `json:"p90_switched_seconds"`
}

// awaitWave waits until all n pools name config (Resolved True, no claim)
// and have its event, and returns the times since start.
func (w *watcher) awaitWave(ctx context.Context, config string, n int, start time.Time, timeout time.Duration) (waveTimes, error) {
	if err := until(ctx, timeout, "every pool on "+config+" with its event", func() (bool, string) {
		switched, events := w.wave(config)
		return switched == n && events == n, fmt.Sprintf("%d switched, %d events of %d", switched, events, n)
	}); err != nil {
		return waveTimes{}, err
	}
	lastSwitch, lastEvent := w.at(config, 1)
	half, _ := w.at(config, 0.5)
	p90, _ := w.at(config, 0.9)
	t := waveTimes{
		StatusSeconds: secs(lastSwitch.Sub(start)), EventsSeconds: secs(lastEvent.Sub(start)),
		HalfSeconds: secs(half.Sub(start)), P90Seconds: secs(p90.Sub(start)),
	}
	t.Seconds = max(t.StatusSeconds, t.EventsSeconds)
	return t, nil
}

// until polls cond (in memory) every 20 ms until it holds.
func until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	return untilEvery(ctx, 20*time.Millisecond, timeout, what, cond)
}

// untilEvery polls cond every interval until it holds, for at most timeout.
func untilEvery(ctx context.Context, interval, timeout time.Duration, what string, cond func() (bool, string)) error {
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
		case <-time.After(interval):
		}
	}
}
