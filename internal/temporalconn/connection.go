package temporalconn

import (
	"errors"
	"fmt"
	"os"

	"go.temporal.io/sdk/contrib/envconfig"
)

// A connection setting resolves, from the strongest:
//
//  1. the flag (or a field of Settings set by code);
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

// Connection is the resolved Temporal connection.
type Connection struct {
	// Profile holds the settings in effect, in the SDK's terms.
	Profile envconfig.ClientConfigProfile
	// ConfigFile is the file named by flag or TEMPORAL_CONFIG_FILE ("" for
	// the SDK's default path), ProfileName the profile asked for ("" for
	// "default").
	ConfigFile, ProfileName string
}

// Resolve resolves the connection settings (see the order above). It reads
// the environment and the profile file.
func (s Settings) Resolve() (Connection, error) {
	c := Connection{ConfigFile: s.ConfigFile, ProfileName: s.Profile}
	if c.ConfigFile == "" {
		c.ConfigFile = os.Getenv("TEMPORAL_CONFIG_FILE")
	}
	if c.ProfileName == "" {
		c.ProfileName = os.Getenv("TEMPORAL_PROFILE")
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath:    s.ConfigFile,
		ConfigFileProfile: s.Profile,
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
	if s.Address != "" {
		prof.Address = s.Address
	}
	if s.Namespace != "" {
		prof.Namespace = s.Namespace
	}
	if s.APIKey != "" {
		prof.APIKey = s.APIKey
	}
	if s.TLSCAFile != "" {
		t := tlsOf()
		t.ServerCACertPath, t.ServerCACertData = s.TLSCAFile, nil
	}
	if s.TLSCertFile != "" {
		t := tlsOf()
		t.ClientCertPath, t.ClientCertData = s.TLSCertFile, nil
	}
	if s.TLSKeyFile != "" {
		t := tlsOf()
		t.ClientKeyPath, t.ClientKeyData = s.TLSKeyFile, nil
	}
	if s.TLSServerName != "" {
		tlsOf().ServerName = s.TLSServerName
	}
	// Defaults.
	if prof.Address == "" {
		prof.Address = DefaultAddress
	}
	if prof.Namespace == "" {
		prof.Namespace = DefaultNamespace
	}
	c.Profile = prof
	return c, checkTLSPaths(prof.TLS)
}

// checkTLSPaths refuses key material where a path belongs, naming the
// setting and never the value. The setting may come from a flag, a
// variable or the file, so the error names all three.
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
