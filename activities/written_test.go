package activities

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ate.dev/orchestrator/api/v1alpha1"
)

// TestWrittenPools: a step gets the pool its switch's last write left only
// at the version it asks for, once; and the store stays bounded however many
// pools are written.
func TestWrittenPools(t *testing.T) {
	pool := func(name, rv string) *v1alpha1.WorkerPool {
		return &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	tests := []struct {
		name   string
		ask    string
		wantOK bool
	}{
		{"at the written version", "8", true},
		{"at another version", "7", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w writtenPools
			w.put(pool("a", "8"))
			got, ok := w.take(key, tt.ask)
			require.Equal(t, tt.wantOK, ok)
			if ok {
				require.Equal(t, "8", got.ResourceVersion)
			}
			_, again := w.take(key, "8")
			require.False(t, again, "taken or outdated: asked once")
		})
	}
	t.Run("bounded", func(t *testing.T) {
		var w writtenPools
		for i := range writtenPoolsMax + 100 {
			w.put(pool(fmt.Sprintf("p%d", i), "1"))
		}
		require.Len(t, w.pools, writtenPoolsMax)
		last := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", writtenPoolsMax+99)}
		_, ok := w.take(last, "1")
		require.True(t, ok, "the newest write is kept")
	})
	t.Run("a copy", func(t *testing.T) {
		var w writtenPools
		p := pool("a", "8")
		w.put(p)
		p.Labels = map[string]string{"changed": "after the write"}
		got, ok := w.take(key, "8")
		require.True(t, ok)
		require.Empty(t, got.Labels, "the store keeps the write's own copy")
	})
}
