package crashtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	tclient "go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Violation is one breach of an invariant of the design (P1-P6), with the
// objects involved.
type Violation struct {
	// Property is "P1" ... "P6", or "checker" when the checker itself
	// could not look.
	Property string
	// Objects name what is involved: "WorkerPool ns/name",
	// "SandboxConfig name", "workflow <id>".
	Objects []string
	Detail  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s [%s]: %s", v.Property, strings.Join(v.Objects, ", "), v.Detail)
}

// Scope says what one check is about, so that tests sharing a cluster (or
// running in parallel) each judge only their own objects.
type Scope struct {
	// Namespaces holds the pools checked; empty: every namespace.
	Namespaces []string
	// Configs says whether a SandboxConfig is checked; nil: every config.
	Configs func(name string) bool
	// TaskQueues are the task queues of the workflows checked through
	// Temporal (switch overlap, failed workflows and workflow tasks).
	TaskQueues []string
}

func (s Scope) pool(namespace string) bool {
	return len(s.Namespaces) == 0 || slices.Contains(s.Namespaces, namespace)
}

func (s Scope) config(name string) bool { return s.Configs == nil || s.Configs(name) }

// Report is the result of a check.
type Report struct {
	Violations []Violation
	// Converged says whether the pools and configs in scope reached their
	// resolution, and Waited how long that took (or how long was waited).
	Converged bool
	Waited    time.Duration
	// Switches counts switch workflows, Releases the release workflows that
	// released their config, RolledBack the switches that rolled back.
	Switches, Releases, RolledBack int
	// Records counts the object states the watch saw; Gaps the states that
	// came from a list after the watch could not resume.
	Records, Gaps int
}

// Checker watches WorkerPools and SandboxConfigs from the moment it starts
// and, on Check, judges the history it saw, the cluster's final state, the
// pools' events and the workflows' histories against P1-P6.
type Checker struct {
	kube      client.WithWatch
	clientset kubernetes.Interface
	temporal  tclient.Client

	mu      sync.Mutex
	records []*Record
	changed chan struct{} // closed and replaced on every new record
	err     error

	pools, configs *watcher
	cancel         context.CancelFunc
	wg             sync.WaitGroup
}

// NewChecker starts watching and returns once both watches have listed.
// scheme must know ate.dev/v1alpha1 and apps/v1.
func NewChecker(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, temporal tclient.Client) (*Checker, error) {
	kube, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("checker: creating the Kubernetes client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("checker: creating the clientset: %w", err)
	}
	c := &Checker{kube: kube, clientset: cs, temporal: temporal, changed: make(chan struct{})}
	c.pools = &watcher{c: c, kind: kindPool, known: map[string]uint64{},
		newList: func() client.ObjectList { return &v1alpha1.WorkerPoolList{} }}
	c.configs = &watcher{c: c, kind: kindConfig, known: map[string]uint64{},
		newList: func() client.ObjectList { return &v1alpha1.SandboxConfigList{} }}
	wctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for _, w := range []*watcher{c.pools, c.configs} {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			w.run(wctx)
		}()
	}
	for _, w := range []*watcher{c.pools, c.configs} {
		if err := c.waitSynced(ctx, w); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Stop ends the watches.
func (c *Checker) Stop() {
	c.cancel()
	c.wg.Wait()
}

func (c *Checker) add(w *watcher, rec *Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(w, rec)
}

func (c *Checker) addLocked(w *watcher, rec *Record) {
	rec.Seq = len(c.records)
	c.records = append(c.records, rec)
	if rec.Deleted {
		delete(w.known, rec.Key())
	} else {
		w.known[rec.Key()] = rec.RV
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Checker) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// Mark is the position of the next record, for Await.
func (c *Checker) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.records)
}

// Await waits for a record at position from or later that satisfies match,
// e.g. the first pending claim of a switch, so a test can act at that moment.
func (c *Checker) Await(ctx context.Context, from int, match func(*Record) bool) (*Record, error) {
	for {
		c.mu.Lock()
		for ; from < len(c.records); from++ {
			if match(c.records[from]) {
				r := c.records[from]
				c.mu.Unlock()
				return r, nil
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// waitSynced waits until a watcher has seen everything a fresh list shows.
func (c *Checker) waitSynced(ctx context.Context, w *watcher) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if err := c.Err(); err != nil {
			return fmt.Errorf("checker: %w", err)
		}
		ok, why, err := w.caughtUp(ctx)
		if ok {
			return nil
		}
		if err != nil {
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("checker: the %s watch did not catch up: %s", w.kind, why)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Check waits up to bound for the pools and configs in scope to settle (P5,
// P6: every pool on its resolution, no deleting config that no pool names,
// no switch running), then judges the whole history seen since the checker
// started (P1-P4) and the workflows in the scope's task queues.
func (c *Checker) Check(ctx context.Context, scope Scope, bound time.Duration) Report {
	start := time.Now()
	pending, err := c.settle(ctx, scope, bound)
	if err != nil {
		pending = []Violation{{Property: "checker", Detail: err.Error()}}
	}
	rep := Report{Converged: len(pending) == 0, Waited: time.Since(start)}
	for _, v := range pending {
		v.Detail = fmt.Sprintf("not settled after %s: %s", bound, v.Detail)
		rep.Violations = append(rep.Violations, v)
	}
	add := func(vs []Violation, err error) {
		rep.Violations = append(rep.Violations, vs...)
		if err != nil {
			rep.Violations = append(rep.Violations, Violation{Property: "checker", Detail: err.Error()})
		}
	}
	for _, w := range []*watcher{c.pools, c.configs} {
		add(nil, c.waitSynced(ctx, w))
	}
	recs := c.snapshot()
	rep.Records = len(recs)
	for _, r := range recs {
		if r.GapFrom > 0 {
			rep.Gaps++
		}
	}
	hist := judgeHistory(recs, scope)
	add(hist.violations, nil)
	add(c.judgeEvents(ctx, scope, hist))
	add(c.judgeWorkflows(ctx, scope, &rep))
	return rep
}

// Settle waits up to bound for the pools and configs in scope to settle,
// as Check does, without judging the history; it returns what still
// differs when the bound passes.
func (c *Checker) Settle(ctx context.Context, scope Scope, bound time.Duration) error {
	pending, err := c.settle(ctx, scope, bound)
	if err == nil && len(pending) == 0 {
		return nil
	}
	var lines []string
	if err != nil {
		lines = append(lines, err.Error())
	}
	for _, v := range pending {
		lines = append(lines, v.String())
	}
	return fmt.Errorf("not settled after %s:\n%s", bound, strings.Join(lines, "\n"))
}

// settle polls settled until nothing differs or bound passes, and returns
// the last poll's result.
func (c *Checker) settle(ctx context.Context, scope Scope, bound time.Duration) ([]Violation, error) {
	deadline := time.Now().Add(bound)
	for {
		pending, err := c.settled(ctx, scope)
		if err == nil && len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return pending, err
		}
		pause(ctx, 250*time.Millisecond)
	}
}

// snapshot returns the records in history order: by revision, then by
// arrival.
func (c *Checker) snapshot() []*Record {
	c.mu.Lock()
	recs := slices.Clone(c.records)
	c.mu.Unlock()
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].RV != recs[j].RV {
			return recs[i].RV < recs[j].RV
		}
		return recs[i].Seq < recs[j].Seq
	})
	return recs
}

// Err is the first error that stopped a watch, if any.
func (c *Checker) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

var errNoTemporal = errors.New("checker: no Temporal client")
