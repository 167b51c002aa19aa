package probes

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
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
}

func TestServeMetricsDisabled(t *testing.T) {
	for _, addr := range []string{"", "0"} {
		require.NoError(t, ServeMetrics(context.Background(), Metrics{BindAddress: addr, Secure: true}, nil, nil))
	}
}

// HTTPS needs the API server that reviews its requests.
func TestServeMetricsSecureNeedsAnAPIServer(t *testing.T) {
	err := ServeMetrics(context.Background(), Metrics{BindAddress: freeAddr(t), Secure: true}, nil, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "no API server configuration")
}
