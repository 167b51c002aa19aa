package temporalconn

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/internal/syncbuf"
)

func TestDialUnreachable(t *testing.T) {
	// A port nobody listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, client.Options{HostPort: addr, Namespace: "ns"}, log)

	require.Nil(t, c)
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "could not connect to Temporal at "+addr)
	require.Contains(t, err.Error(), `namespace "ns"`)
	require.Less(t, time.Since(start), 10*time.Second, "must give up when the context is done")
	logs := buf.String()
	require.Contains(t, logs, "cannot connect to Temporal; retrying")
	require.Contains(t, logs, "address="+addr)
	require.GreaterOrEqual(t, strings.Count(logs, "cannot connect to Temporal; retrying"), 2, "must retry: %s", logs)
}

func TestDialNilLoggerAndDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Dial(ctx, client.Options{HostPort: "127.0.0.1:1"}, nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, context.Canceled)
}
