package options

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// A Temporal connection setting resolves, from the strongest:
//
//  1. the flag (or a field of Options set by code);
//  2. the standard environment variable, as the SDK's contrib/envconfig
//     and the temporal CLI read it: set, even to "", it replaces the
//     profile's value; any TEMPORAL_TLS_* variable (or TEMPORAL_TLS=true)
//     turns TLS on, TEMPORAL_TLS=false off;
//  3. the profile (--temporal-profile, TEMPORAL_PROFILE, else "default")
//     of the TOML file (--temporal-config-file, TEMPORAL_CONFIG_FILE, else
//     the CLI's temporalio/temporal.toml under the user's config
//     directory); a missing file is no error, a named profile it lacks is;
//  4. the default: 127.0.0.1:7233, namespace "default", plaintext (TLS
//     with the system roots when an API key is set).

// TemporalConnection is the resolved Temporal connection.
type TemporalConnection struct {
	// Profile holds the settings in effect, in the SDK's terms.
	Profile envconfig.ClientConfigProfile
	// ConfigFile is the file named by flag or TEMPORAL_CONFIG_FILE ("" for
	// the SDK's default path), ProfileName the profile asked for ("" for
	// "default").
	ConfigFile, ProfileName string
}

// TemporalConnection resolves the Temporal connection settings (see the
// order above). It reads the environment and the profile file.
func (o *Options) TemporalConnection() (TemporalConnection, error) {
	c := TemporalConnection{ConfigFile: o.TemporalConfigFile, ProfileName: o.TemporalProfile}
	if c.ConfigFile == "" {
		c.ConfigFile = os.Getenv("TEMPORAL_CONFIG_FILE")
	}
	if c.ProfileName == "" {
		c.ProfileName = os.Getenv("TEMPORAL_PROFILE")
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath:    o.TemporalConfigFile,
		ConfigFileProfile: o.TemporalProfile,
	})
	if err != nil {
		return c, fmt.Errorf("loading the Temporal client profile %q (file %s): %w", or(c.ProfileName, envconfig.DefaultConfigFileProfile), or(c.ConfigFile, envconfig.DefaultConfigFilePath()), err)
	}
	tlsOf := func() *envconfig.ClientConfigTLS {
		if prof.TLS == nil {
			prof.TLS = &envconfig.ClientConfigTLS{}
		}
		return prof.TLS
	}
	// Flags over everything.
	if o.TemporalAddress != "" {
		prof.Address = o.TemporalAddress
	}
	if o.TemporalNamespace != "" {
		prof.Namespace = o.TemporalNamespace
	}
	if o.APIKey != "" {
		prof.APIKey = o.APIKey
	}
	if o.TLSCAFile != "" {
		t := tlsOf()
		t.ServerCACertPath, t.ServerCACertData = o.TLSCAFile, nil
	}
	if o.TLSCertFile != "" {
		t := tlsOf()
		t.ClientCertPath, t.ClientCertData = o.TLSCertFile, nil
	}
	if o.TLSKeyFile != "" {
		t := tlsOf()
		t.ClientKeyPath, t.ClientKeyData = o.TLSKeyFile, nil
	}
	if o.TLSServerName != "" {
		tlsOf().ServerName = o.TLSServerName
	}
	// Defaults.
	if prof.Address == "" {
		prof.Address = DefaultTemporalAddress
	}
	if prof.Namespace == "" {
		prof.Namespace = DefaultTemporalNamespace
	}
	c.Profile = prof
	return c, checkTLSPaths(prof.TLS)
}

// checkTLSPaths refuses key material where a path belongs, naming the
// setting and never the value.
func checkTLSPaths(t *envconfig.ClientConfigTLS) error {
	if t == nil {
		return nil
	}
	var errs []error
	if LooksLikeKeyMaterial(t.ClientKeyPath) {
		errs = append(errs, errors.New("the Temporal client key path (--temporal-tls-client-key-path, TEMPORAL_TLS_CLIENT_KEY_PATH, client_key_path) holds key material, not a path: mount the key as a file and give its path, or use TEMPORAL_TLS_CLIENT_KEY_DATA"))
	}
	if LooksLikeKeyMaterial(t.ClientCertPath) || LooksLikeKeyMaterial(t.ServerCACertPath) {
		errs = append(errs, errors.New("the Temporal client certificate and server CA paths (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH) take paths, not PEM content"))
	}
	if (t.ClientCertPath == "" && len(t.ClientCertData) == 0) != (t.ClientKeyPath == "" && len(t.ClientKeyData) == 0) {
		errs = append(errs, errors.New("the Temporal client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH) and key (TEMPORAL_TLS_CLIENT_KEY_PATH) must be set together"))
	}
	return errors.Join(errs...)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// TemporalClientOptions returns the Temporal client options of the resolved
// connection, and logs, on log (nil: slog.Default()), where the connection
// came from. It fails with a clear error
// when a setting is invalid or a file cannot be used.
func (o *Options) TemporalClientOptions(log *slog.Logger) (client.Options, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := o.Validate(); err != nil {
		return client.Options{}, fmt.Errorf("invalid Temporal options: %w", err)
	}
	conn, err := o.TemporalConnection()
	if err != nil {
		return client.Options{}, err
	}
	prof := conn.Profile
	tlsCfg, err := tlsConfig(prof.TLS)
	if err != nil {
		return client.Options{}, err
	}
	// The SDK's own conversion: credentials, gRPC metadata, authority, and
	// TLS with the system roots for an API key without TLS settings.
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("the Temporal connection settings: %w", err)
	}
	if tlsCfg != nil {
		opts.ConnectionOptions.TLS = tlsCfg
	}
	if opts.ConnectionOptions.GrpcCompression, err = o.grpcCompression(); err != nil {
		return client.Options{}, err
	}
	log.Info("Temporal connection", "address", opts.HostPort, "namespace", opts.Namespace,
		"configFile", or(conn.ConfigFile, envconfig.DefaultConfigFilePath()), "profile", or(conn.ProfileName, envconfig.DefaultConfigFileProfile),
		"tls", opts.ConnectionOptions.TLS != nil && !opts.ConnectionOptions.TLSDisabled, "apiKey", prof.APIKey != "")
	return opts, nil
}

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

// grpcCompression is the SDK's setting for TemporalGRPCCompression. Without
// compression a request (and the answer, which follows the request's
// encoding) costs neither end a gzip pass: on the bench, where the
// processes and Temporal share the machine's CPU, that was about a tenth of
// Temporal's CPU per switch (docs/decisions/0016-temporal-transport.md).
func (o *Options) grpcCompression() (client.GrpcCompression, error) {
	switch o.TemporalGRPCCompression {
	case "", "none":
		return &client.GrpcCompressionNone{}, nil
	case "gzip":
		return &client.GrpcCompressionGzip{}, nil
	}
	return nil, fmt.Errorf("--temporal-grpc-compression (ATE_TEMPORAL_GRPC_COMPRESSION) must be %q or %q, got %q", "none", "gzip", o.TemporalGRPCCompression)
}
