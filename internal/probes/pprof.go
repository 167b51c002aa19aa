package probes

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof serves Go's profiling endpoints (/debug/pprof/, as
// net/http/pprof registers them) on addr until ctx is done, for measuring
// where the process spends its CPU (test/bench -profile). Off unless addr
// is set: the endpoints are unauthenticated and a profile costs CPU while
// it runs, so bind them to loopback. An empty addr or "0" serves nothing.
// It returns once the address is bound, so a caller may profile at once.
func ServePprof(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" || addr == "0" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// No write timeout: a CPU profile answers after the seconds it asks for.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server stopped", "address", addr, "error", err)
		}
	}()
	log.Info("serving pprof", "address", ln.Addr().String())
	return nil
}
