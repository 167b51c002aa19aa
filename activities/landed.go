package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// lastStatesWait bounds how long a confirm waits for the API server to
// replay a gone pool's last states.
const lastStatesWait = 5 * time.Second

// landedBeforeGone tells a switch step that finds the pool gone whether an
// earlier run of the switch's workflow task had moved the class before the
// pool went (its markers lost with a worker, or the write's response never
// came back: the API server may commit a write whose caller is gone). The
// pool's own history does: the API server replays a watch from any recent
// resourceVersion, deletions included, so the states the pool went through
// after the claim (in.ResourceVersion) show whether one had the class on
// the config with this run's stamp. Nothing but this switch writes the
// class's configRef between its claim and its end (a pool's switches run
// one at a time), so such a state is this switch's confirm.
//
// Without that history (no resourceVersion known, or a re-run so late that
// the API server no longer holds it) the move cannot be proved, and the
// switch ends without its event.
func (a *Activities) landedBeforeGone(ctx context.Context, in SettleInput) bool {
	if in.ResourceVersion == "" {
		return false
	}
	landed, err := a.classMovedBeforeGone(ctx, in)
	if activity.IsActivity(ctx) {
		log := activity.GetLogger(ctx)
		switch {
		case err != nil:
			log.Warn("cannot tell whether an earlier attempt confirmed the switch before the pool went; no event is recorded for it",
				"pool", in.Pool.String(), "uid", in.Pool.UID, "class", in.Class, "config", in.Config, "error", err)
		case landed:
			log.Info("an earlier attempt confirmed the switch before the pool went (its completion was lost); its event is still recorded",
				"pool", in.Pool.String(), "uid", in.Pool.UID, "class", in.Class, "config", in.Config)
		}
	}
	return landed
}

// classMovedBeforeGone watches the pool from the claim's resourceVersion
// until the deletion of the incarnation in.Pool names, and reports whether
// a state on the way had the class on in.Config.
func (a *Activities) classMovedBeforeGone(ctx context.Context, in SettleInput) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, lastStatesWait)
	defer cancel()
	w, err := a.Live.Watch(ctx, &v1alpha1.WorkerPoolList{},
		ctrlclient.InNamespace(in.Pool.Namespace),
		ctrlclient.MatchingFields{"metadata.name": in.Pool.Name},
		&ctrlclient.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: in.ResourceVersion}})
	if err != nil {
		return false, fmt.Errorf("watching WorkerPool %s from resourceVersion %s: %w", in.Pool, in.ResourceVersion, err)
	}
	defer w.Stop()
	return movedBeforeDeletion(ctx, w.ResultChan(), in, switchRun(ctx))
}

// movedBeforeDeletion reads a pool's watch events up to the deletion of
// in.Pool's incarnation and reports whether one had the class on in.Config,
// stamped by run.
func movedBeforeDeletion(ctx context.Context, events <-chan watch.Event, in SettleInput, run *v1alpha1.SwitchRunReference) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("the deletion of WorkerPool %s (uid %s) was not replayed in time: %w", in.Pool, in.Pool.UID, ctx.Err())
		case ev, ok := <-events:
			if !ok {
				return false, fmt.Errorf("the watch of WorkerPool %s closed before its deletion", in.Pool)
			}
			if ev.Type == watch.Error {
				return false, fmt.Errorf("watching WorkerPool %s: %w", in.Pool, apierrors.FromObject(ev.Object))
			}
			pool, ok := ev.Object.(*v1alpha1.WorkerPool)
			if !ok || (in.Pool.UID != "" && string(pool.UID) != in.Pool.UID) {
				continue // a bookmark, or a later pool under the same name
			}
			if st := pool.Status.ClassStatus(in.Class); st != nil && st.ConfigRef != nil && st.ConfigRef.Name == in.Config && stampedBy(st, run) {
				return true, nil
			}
			if ev.Type == watch.Deleted {
				return false, nil
			}
		}
	}
}
