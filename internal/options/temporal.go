package options

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"go.temporal.io/sdk/client"
)

// TemporalClientOptions returns the Temporal client options: address,
// namespace, TLS (when a CA, client certificate or server name is set) and
// API key credentials. It fails with a clear error when a setting is
// invalid or a file cannot be used.
func (o *Options) TemporalClientOptions() (client.Options, error) {
	if err := o.Validate(); err != nil {
		return client.Options{}, fmt.Errorf("invalid Temporal options: %w", err)
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return client.Options{}, err
	}
	opts := client.Options{
		HostPort:  o.TemporalAddress,
		Namespace: o.TemporalNamespace,
	}
	opts.ConnectionOptions.TLS = tlsCfg
	if o.APIKey != "" {
		// The SDK turns TLS on with the system roots when an API key is set
		// and TLS is not configured: keys are never sent in plaintext.
		opts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	return opts, nil
}

// tlsConfig returns nil when no TLS setting is given.
func (o *Options) tlsConfig() (*tls.Config, error) {
	if o.TLSCAFile == "" && o.TLSCertFile == "" && o.TLSServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading --temporal-tls-ca (TEMPORAL_TLS_CA): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--temporal-tls-ca (TEMPORAL_TLS_CA) %s holds no PEM certificate", o.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if o.TLSCertFile != "" {
		// Load once now, so a bad pair fails at start-up, and again at each
		// handshake, so a rotated certificate (a re-mounted Secret) is used
		// on the next connection without a restart.
		if _, err := o.loadClientCert(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return o.loadClientCert()
		}
	}
	return cfg, nil
}

func (o *Options) loadClientCert() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the Temporal client certificate --temporal-tls-cert %s and key --temporal-tls-key %s: %w",
			o.TLSCertFile, o.TLSKeyFile, err)
	}
	return &cert, nil
}
