package probes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServePprof: off unless an address is set (ServePprof binds before it
// returns, so nothing new listens once it has returned without); on, it
// serves Go's profiles.
func TestServePprof(t *testing.T) {
	for _, addr := range []string{"", "0"} {
		t.Run(fmt.Sprintf("off with %q", addr), func(t *testing.T) {
			before := listening(t)
			require.NoError(t, ServePprof(t.Context(), addr, slog.New(slog.DiscardHandler)))
			require.Empty(t, newListeners(before, listening(t)))
		})
	}
	t.Run("on", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		addr := freeAddr(t)
		require.NoError(t, ServePprof(ctx, addr, slog.New(slog.DiscardHandler)))
		resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(body), "goroutine profile:")
	})
}
