package temporalconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"go.temporal.io/sdk/contrib/envconfig"
)

// tlsConfig is the SDK's TLS configuration of a profile (nil without TLS
// settings, or with TLS disabled) with two differences: TLS 1.2 at least,
// and a client certificate given by path is loaded at start, so a bad pair
// fails then, and again at each handshake, so a rotated certificate (a
// re-mounted Secret) is used on the next connection without a restart.
func tlsConfig(t *envconfig.ClientConfigTLS) (*tls.Config, error) {
	if t == nil || t.Disabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.DisableHostVerification} //nolint:gosec // the user's explicit choice
	ca := t.ServerCACertData
	if t.ServerCACertPath != "" {
		if len(ca) > 0 {
			return nil, errors.New("the Temporal server CA is given both as a path and as data: set one")
		}
		var err error
		if ca, err = os.ReadFile(t.ServerCACertPath); err != nil {
			return nil, fmt.Errorf("reading the Temporal server CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH): %w", err)
		}
	}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("the Temporal server CA %s holds no PEM certificate", or(redactPath(t.ServerCACertPath), "(data)"))
		}
		cfg.RootCAs = pool
	}
	switch {
	case len(t.ClientCertData) > 0 || len(t.ClientKeyData) > 0:
		if t.ClientCertPath != "" || t.ClientKeyPath != "" {
			return nil, errors.New("the Temporal client certificate or key is given both as a path and as data: set one of each")
		}
		cert, err := tls.X509KeyPair(t.ClientCertData, t.ClientKeyData)
		if err != nil {
			return nil, fmt.Errorf("loading the Temporal client certificate and key data: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case t.ClientCertPath != "":
		load := func() (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(t.ClientCertPath, t.ClientKeyPath)
			if err != nil {
				return nil, fmt.Errorf("loading the Temporal client certificate %s and key %s: %w", t.ClientCertPath, redactPath(t.ClientKeyPath), err)
			}
			return &cert, nil
		}
		if _, err := load(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return load() }
	}
	return cfg, nil
}
