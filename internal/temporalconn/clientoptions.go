package temporalconn

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// ClientOptions returns the Temporal client options of the resolved
// connection, and logs, on log (nil: slog.Default()), where the connection
// came from. It fails with a clear error when a setting is invalid or a
// file cannot be used.
func (s Settings) ClientOptions(log *slog.Logger) (client.Options, error) {
	if log == nil {
		log = slog.Default()
	}
	compression, err := ParseCompression(s.GRPCCompression)
	if err != nil {
		return client.Options{}, fmt.Errorf("the Temporal gRPC compression %w", err)
	}
	conn, err := s.Resolve()
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
	opts.ConnectionOptions.GrpcCompression = compression
	log.Info("Temporal connection", "address", opts.HostPort, "namespace", opts.Namespace,
		"configFile", or(conn.ConfigFile, envconfig.DefaultConfigFilePath()), "profile", or(conn.ProfileName, envconfig.DefaultConfigFileProfile),
		"tls", opts.ConnectionOptions.TLS != nil && !opts.ConnectionOptions.TLSDisabled, "apiKey", prof.APIKey != "")
	return opts, nil
}
