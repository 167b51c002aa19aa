package crashtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Record is one state of a WorkerPool or a SandboxConfig, as the Checker's
// watch saw it. Exactly one of Pool and Config is set.
type Record struct {
	// Seq orders records as they arrived; RV is the object's
	// resourceVersion, which with one etcd is its global revision, so
	// records of pools and configs sort into one history.
	Seq    int
	RV     uint64
	Pool   *v1alpha1.WorkerPool
	Config *v1alpha1.SandboxConfig
	// Deleted: the object is gone at RV (the object is its last state).
	Deleted bool
	// Listed: the state came from a list, not a watch event; when the
	// watcher knew an older state of the object (GapFrom > 0), the changes
	// between GapFrom and RV were not seen.
	Listed  bool
	GapFrom uint64
}

// Key is "namespace/name" for a pool, the name for a config.
func (r *Record) Key() string {
	if r.Pool != nil {
		return r.Pool.Namespace + "/" + r.Pool.Name
	}
	return r.Config.Name
}

// watcher follows one kind of object with a watch that resumes from the
// last resourceVersion it saw, so it misses nothing while the API server
// keeps its history; when it cannot resume (410 Gone, e.g. after an API
// server restart) it lists again and records which objects changed unseen.
type watcher struct {
	c       *Checker
	kind    string
	newList func() client.ObjectList
	known   map[string]uint64 // key -> RV of the last state seen; guarded by c.mu
	relists int               // guarded by c.mu
}

func (w *watcher) run(ctx context.Context) {
	rv, first := "", true
	for ctx.Err() == nil {
		if rv == "" {
			list := w.newList()
			if err := w.c.kube.List(ctx, list); err != nil {
				pause(ctx, 200*time.Millisecond)
				continue
			}
			objs, err := meta.ExtractList(list)
			if err != nil {
				w.c.fail(fmt.Errorf("reading a %s list: %w", w.kind, err))
				return
			}
			if err := w.addListed(objs, list.GetResourceVersion(), first); err != nil {
				w.c.fail(err)
				return
			}
			first = false
			rv = list.GetResourceVersion()
		}
		wi, err := w.c.kube.Watch(ctx, w.newList(), &client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion: rv, AllowWatchBookmarks: true,
		}})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
			}
			pause(ctx, 200*time.Millisecond)
			continue
		}
		rv = w.consume(ctx, wi, rv)
	}
}

// consume reads one watch until it ends and returns the resourceVersion to
// resume from ("" to list again).
func (w *watcher) consume(ctx context.Context, wi watch.Interface, rv string) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return ""
				}
				return rv
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				rec, err := wrap(ev.Object)
				if err != nil {
					w.c.fail(err)
					return rv
				}
				rec.Deleted = ev.Type == watch.Deleted
				w.c.add(w, rec)
				rv = strconv.FormatUint(rec.RV, 10)
			}
		}
	}
}

// addListed records a list's objects. Objects known before and not listed
// were deleted unseen; they are recorded deleted at the list's revision.
func (w *watcher) addListed(objs []runtime.Object, listRV string, first bool) error {
	at, err := strconv.ParseUint(listRV, 10, 64)
	if err != nil {
		return fmt.Errorf("%s list resourceVersion %q: %w", w.kind, listRV, err)
	}
	var recs []*Record
	listed := map[string]bool{}
	for _, o := range objs {
		rec, err := wrap(o)
		if err != nil {
			return err
		}
		rec.Listed = true
		listed[rec.Key()] = true
		recs = append(recs, rec)
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if !first {
		w.relists++
	}
	for _, rec := range recs {
		prev, ok := w.known[rec.Key()]
		if ok && prev == rec.RV {
			continue // unchanged: nothing was missed
		}
		if ok {
			rec.GapFrom = prev
		}
		w.c.addLocked(w, rec)
	}
	for key, prev := range w.known {
		if listed[key] {
			continue
		}
		rec := w.deletedUnseen(key, at)
		rec.Listed, rec.GapFrom = true, prev
		w.c.addLocked(w, rec)
	}
	return nil
}

// deletedUnseen is the record of an object that vanished while the watch
// was down: its last seen state, deleted at revision at.
func (w *watcher) deletedUnseen(key string, at uint64) *Record {
	for i := len(w.c.records) - 1; i >= 0; i-- {
		r := w.c.records[i]
		if (w.kind == kindPool) == (r.Pool != nil) && r.Key() == key {
			cp := *r
			cp.RV, cp.Deleted = at, true
			return &cp
		}
	}
	rec := &Record{RV: at, Deleted: true}
	if w.kind == kindPool {
		ns, name, _ := strings.Cut(key, "/")
		rec.Pool = &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	} else {
		rec.Config = &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: key}}
	}
	return rec
}

// caughtUp reports whether the watcher has seen every change a fresh list
// shows: each listed object at its listed revision or later, and the
// deletion of every object it knows that the list lacks.
func (w *watcher) caughtUp(ctx context.Context) (bool, string, error) {
	list := w.newList()
	if err := w.c.kube.List(ctx, list); err != nil {
		return false, "", err
	}
	listRV, err := strconv.ParseUint(list.GetResourceVersion(), 10, 64)
	if err != nil {
		return false, "", err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return false, "", err
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	listed := map[string]bool{}
	for _, o := range objs {
		rec, err := wrap(o)
		if err != nil {
			return false, "", err
		}
		listed[rec.Key()] = true
		if w.known[rec.Key()] < rec.RV {
			return false, fmt.Sprintf("%s %s at %d not seen yet", w.kind, rec.Key(), rec.RV), nil
		}
	}
	for key, rv := range w.known {
		if !listed[key] && rv <= listRV {
			return false, fmt.Sprintf("deletion of %s %s not seen yet", w.kind, key), nil
		}
	}
	return true, "", nil
}

const (
	kindPool   = "WorkerPool"
	kindConfig = "SandboxConfig"
)

// wrap is the record of a listed or watched WorkerPool or SandboxConfig.
func wrap(o runtime.Object) (*Record, error) {
	var rec Record
	switch o := o.(type) {
	case *v1alpha1.WorkerPool:
		rec.Pool = o.DeepCopy()
	case *v1alpha1.SandboxConfig:
		rec.Config = o.DeepCopy()
	default:
		return nil, fmt.Errorf("a watch or list sent a %T", o)
	}
	rv := o.(client.Object).GetResourceVersion()
	var err error
	if rec.RV, err = strconv.ParseUint(rv, 10, 64); err != nil {
		return nil, fmt.Errorf("%T %s resourceVersion %q: %w", o, rec.Key(), rv, err)
	}
	return &rec, nil
}

// pause waits d or until ctx is done: the back-off of a retry loop.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
