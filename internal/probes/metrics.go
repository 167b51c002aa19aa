package probes

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Metrics says how a process serves /metrics: controller-runtime's
// registry (where options.Process also records the Temporal SDK's metrics
// and the product's), through controller-runtime's metrics server.
type Metrics struct {
	// BindAddress is host:port; "" or "0" serves nothing.
	BindAddress string
	// Secure serves HTTPS and lets a request through only when the API
	// server authenticates its bearer token (TokenReview) and authorises
	// get on the non-resource URL /metrics for it (SubjectAccessReview):
	// the process's identity needs create on tokenreviews and
	// subjectaccessreviews, the scraper's a role such as
	// ate-orchestrator-metrics-reader. Otherwise plain HTTP, open to
	// whoever reaches the address: bind it to loopback.
	Secure bool
	// CertDir holds the HTTPS certificate (tls.crt, tls.key), reloaded
	// when it changes; empty: a self-signed one made at start.
	CertDir string
}

// ServeMetrics serves /metrics as m says until ctx is done. cfg reaches
// the API server that reviews the requests (Secure only). It fails when
// the server cannot be set up; a bind that fails later is logged.
func ServeMetrics(ctx context.Context, m Metrics, cfg *rest.Config, log *slog.Logger) error {
	if m.BindAddress == "" || m.BindAddress == "0" {
		return nil
	}
	opts := metricsserver.Options{BindAddress: m.BindAddress, SecureServing: m.Secure, CertDir: m.CertDir}
	var srv metricsserver.Server
	if m.Secure {
		if cfg == nil {
			return fmt.Errorf("serving metrics securely on %s: no API server configuration to review requests with", m.BindAddress)
		}
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return fmt.Errorf("serving metrics securely on %s: the API server's HTTP client: %w", m.BindAddress, err)
		}
		if srv, err = metricsserver.NewServer(opts, cfg, hc); err != nil {
			return fmt.Errorf("serving metrics securely on %s: %w", m.BindAddress, err)
		}
	} else {
		var err error
		if srv, err = metricsserver.NewServer(opts, nil, nil); err != nil {
			return fmt.Errorf("serving metrics on %s: %w", m.BindAddress, err)
		}
	}
	go func() {
		if err := srv.Start(ctx); err != nil {
			log.Error("metrics server stopped", "address", m.BindAddress, "secure", m.Secure, "error", err)
		}
	}()
	return nil
}
