package teardown

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// conflictingWriter is someone else writing each config just before
// teardown patches it, the first times it tries: the real API server then
// refuses teardown's patch, made on the version it read, with a Conflict.
type conflictingWriter struct {
	client.Client
	times     int // per config
	conflicts map[string]int
}

func (w *conflictingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if w.conflicts[obj.GetName()] < w.times {
		w.conflicts[obj.GetName()]++
		var c v1alpha1.SandboxConfig
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), &c); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, "example.com/touched", fmt.Sprint(w.conflicts[obj.GetName()]))
		if err := w.Client.Update(ctx, &c); err != nil {
			return err
		}
	}
	return w.Client.Patch(ctx, obj, patch, opts...)
}

// TestRunUnderConflicts: configs written by someone else between teardown's
// read and its patch are read again and released; the other writer's
// changes and other finalizers are kept; too many conflicts in a row fail
// with the config named, not silently.
func TestRunUnderConflicts(t *testing.T) {
	kube := testenv.Current().Kube
	tests := []struct {
		name    string
		times   int
		wantErr string
	}{
		{name: "a few conflicts: read again and released", times: 3},
		{name: "conflicts without end: fails naming the config", times: 100,
			wantErr: `removing sandboxconfig.ate.dev/workerpool-protection from SandboxConfig "contested-`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			name := fmt.Sprintf("contested-%d", i)
			require.NoError(t, kube.Create(ctx, config(name, "example.com/keep-me", v1alpha1.ProtectionFinalizer)))
			t.Cleanup(func() {
				var c v1alpha1.SandboxConfig
				if kube.Get(ctx, client.ObjectKey{Name: name}, &c) == nil {
					c.Finalizers = nil
					_ = kube.Update(ctx, &c)
					_ = kube.Delete(ctx, &c)
				}
			})
			w := &conflictingWriter{Client: kube, times: tt.times, conflicts: map[string]int{}}

			rep, err := Run(ctx, w)
			var got v1alpha1.SandboxConfig
			require.NoError(t, kube.Get(ctx, client.ObjectKey{Name: name}, &got))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Contains(t, got.Finalizers, v1alpha1.ProtectionFinalizer)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.times, w.conflicts[name], "each patch met a newer config")
			require.Contains(t, rep.Released, name)
			require.Equal(t, []string{"example.com/keep-me"}, got.Finalizers)
			require.Equal(t, fmt.Sprint(tt.times), got.Annotations["example.com/touched"], "the other writer's change is kept")
		})
	}
}
