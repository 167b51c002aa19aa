// Package probes serves the worker's and the starter's health and readiness
// endpoints (its own plain HTTP server) and their metrics (controller-runtime's
// metrics server, HTTPS with authentication and authorisation by the API
// server in a cluster).
package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
)

// TemporalReady reports ready only while the Temporal server answers, so a
// worker that lost its server is taken out of rotation and seen as such.
func TemporalReady(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}

// Connecting is the readiness of a process that serves its probes before it
// reaches Temporal, so that a liveness probe is answered while it waits: not
// ready until Connected, then ready while the server answers.
type Connecting struct{ c atomic.Pointer[client.Client] }

// Connected records the client once it has reached Temporal.
func (r *Connecting) Connected(c client.Client) { r.c.Store(&c) }

// Ready is the readiness check to Serve.
func (r *Connecting) Ready(ctx context.Context) error {
	c := r.c.Load()
	if c == nil {
		return errors.New("not connected to Temporal yet")
	}
	return TemporalReady(*c)(ctx)
}

// Naming is the readiness of a process that names its cluster before its
// workflows run (kube.Scope): not ready until named, and while it waits,
// ready says why (the last failed look: RBAC forbids reading kube-system,
// the API server is down).
type Naming struct {
	mu    sync.Mutex
	named bool
	err   error
}

// Report records a failed look's error, or, nil, that the cluster is named.
func (n *Naming) Report(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.named, n.err = err == nil, err
}

// Ready is the readiness check to Serve.
func (n *Naming) Ready(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.named:
		return nil
	case n.err != nil:
		return fmt.Errorf("waiting to name the cluster: %w", n.err)
	}
	return errors.New("the cluster has not been named yet")
}

// Serve serves /healthz (alive) and /readyz (ready) on addr until ctx is
// done. An empty addr or "0" serves nothing.
func Serve(ctx context.Context, addr string, ready func(context.Context) error, log *slog.Logger) {
	if addr == "" || addr == "0" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe server stopped", "address", addr, "error", err)
		}
	}()
}
