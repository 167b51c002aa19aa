package probes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// freeAddr is a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Plain HTTP (make dev, the tests) serves controller-runtime's registry, where
// the processes record every metric, to anyone on the address.
func TestServeMetricsPlain(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ate_probes_test_total", Help: "A counter of this test."})
	require.NoError(t, ctrlmetrics.Registry.Register(c))
	t.Cleanup(func() { ctrlmetrics.Registry.Unregister(c) })
	c.Inc()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddr(t)
	before := listening(t)
	require.NoError(t, ServeMetrics(ctx, Metrics{BindAddress: addr}, nil, slog.New(slog.DiscardHandler)))

	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, rerr)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			body = string(b)
			break
		}
		require.True(t, time.Now().Before(deadline), "the metrics server did not answer on %s: %v", addr, err)
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	require.Contains(t, body, "ate_probes_test_total 1")
	// What TestServeMetricsDisabled relies on: listening sees the server.
	require.Len(t, newListeners(before, listening(t)), 1, "the metrics server on %s among this process's listening sockets", addr)
}

// "" and "0" serve nothing: no socket of this process listens afterwards
// that did not before (controller-runtime's metrics server would take ""
// for its default :8080). Plain HTTP, so that a server that did start
// needs no API server and would listen.
func TestServeMetricsDisabled(t *testing.T) {
	for _, addr := range []string{"", "0"} {
		t.Run(fmt.Sprintf("%q", addr), func(t *testing.T) {
			before := listening(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			require.NoError(t, ServeMetrics(ctx, Metrics{BindAddress: addr}, nil, slog.New(slog.DiscardHandler)))
			// A server starts listening at once in its goroutine; watch
			// for one for a while (TestServeMetricsPlain shows that
			// listening sees one that does).
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				require.Empty(t, newListeners(before, listening(t)), "BindAddress %q: this process listens on new sockets", addr)
			}
		})
	}
}

// listening lists the local addresses of the TCP sockets this process
// listens on, from /proc (Linux).
func listening(t *testing.T) map[string]bool {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads this process's listening sockets from /proc (Linux only)")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(target, "socket:["); ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	out := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: TCP_LISTEN
				out[f[1]] = true
			}
		}
	}
	return out
}

func newListeners(before, after map[string]bool) []string {
	var added []string
	for a := range after {
		if !before[a] {
			added = append(added, a)
		}
	}
	return added
}

// HTTPS needs the API server that reviews its requests.
func TestServeMetricsSecureNeedsAnAPIServer(t *testing.T) {
	err := ServeMetrics(context.Background(), Metrics{BindAddress: freeAddr(t), Secure: true}, nil, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "no API server configuration")
}
