package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestMovedBeforeDeletion: what a gone pool's replayed states tell a
// confirm whose earlier attempt's completion was lost.
func TestMovedBeforeDeletion(t *testing.T) {
	in := SettleInput{Pool: wfapi.PoolRef{Namespace: "ns", Name: "pool", UID: "uid-1"}, Class: gvisor, Config: "new"}
	on := func(uid, config string) *v1alpha1.WorkerPool {
		return &v1alpha1.WorkerPool{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool", UID: types.UID(uid)},
			Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
				Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config},
			}}},
		}
	}
	expired := &apierrors.NewResourceExpired("too old resource version: 10 (2000)").ErrStatus
	tests := []struct {
		name    string
		events  []watch.Event
		closed  bool
		landed  bool
		wantErr string
	}{
		{name: "the confirm's write, then the deletion", landed: true, events: []watch.Event{
			{Type: watch.Modified, Object: on("uid-1", "new")},
			{Type: watch.Deleted, Object: on("uid-1", "new")},
		}},
		{name: "deleted right after the write: only the final state shows it", landed: true, events: []watch.Event{
			{Type: watch.Deleted, Object: on("uid-1", "new")},
		}},
		{name: "deleted before the write", events: []watch.Event{
			{Type: watch.Modified, Object: on("uid-1", "old")},
			{Type: watch.Deleted, Object: on("uid-1", "old")},
		}},
		{name: "a new pool under the same name on the config is not this one", events: []watch.Event{
			{Type: watch.Deleted, Object: on("uid-1", "old")},
			{Type: watch.Added, Object: on("uid-2", "new")},
		}},
		{name: "bookmarks are skipped", landed: true, events: []watch.Event{
			{Type: watch.Bookmark, Object: &v1alpha1.WorkerPool{}},
			{Type: watch.Deleted, Object: on("uid-1", "new")},
		}},
		{name: "history no longer held", wantErr: "too old resource version", events: []watch.Event{
			{Type: watch.Error, Object: runtime.Object(expired)},
		}},
		{name: "watch closed early", closed: true, wantErr: "closed before its deletion"},
		{name: "deletion never replayed", wantErr: "was not replayed in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan watch.Event, len(tt.events))
			for _, ev := range tt.events {
				ch <- ev
			}
			if tt.closed {
				close(ch)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			landed, err := movedBeforeDeletion(ctx, ch, in, nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.landed, landed)
		})
	}
}
