package poolkeeper

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/events"
	"ate.dev/orchestrator/internal/wfapi"
)

// failingRecorder answers every Record with err, counting the calls.
type failingRecorder struct {
	err   error
	calls int
}

func (r *failingRecorder) Record(_ context.Context, _ events.Event) error {
	r.calls++
	return r.err
}

// TestRecordOncePerName: the keeper asks the recorder once per event name
// for as long as the process lives; a namespace being deleted or gone (no
// retry can record the event there) counts as recorded, as it does for the
// RecordEvent activity; any other failure is the pass's error, and the
// next pass asks again.
func TestRecordOncePerName(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e", nil)
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	ev := events.FailureWarning(wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}, gvisor,
		v1alpha1.ReasonSandboxConfigNotFound, `SandboxConfig "x" not found`, metav1.NewTime(time.Unix(100, 0)))
	for _, tc := range []struct {
		name      string
		err       error
		wantErr   bool
		wantCalls int
	}{
		{name: "recorded", wantCalls: 1},
		{name: "namespace being deleted", err: fmt.Errorf("recording: %w", terminating), wantCalls: 1},
		{name: "refused: asked again", err: errors.New("refused"), wantErr: true, wantCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &failingRecorder{err: tc.err}
			r := &Reconciler{Events: rec}
			for range 2 {
				err := r.record(context.Background(), ev)
				if tc.wantErr {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
				}
			}
			require.Equal(t, tc.wantCalls, rec.calls)
		})
	}
}
