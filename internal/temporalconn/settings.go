// Package temporalconn is the processes' connection to Temporal: which
// server, namespace and credentials (resolved as the Temporal SDK's
// contrib/envconfig and the temporal CLI resolve them, under the flags),
// the client's TLS and gRPC compression, and dialing until the server
// answers. It defines no flag: internal/options binds the flags to a
// Settings.
package temporalconn

import (
	"fmt"
	"log/slog"
)

// Settings are the connection settings a process was given explicitly (by
// flag, or by code). Empty leaves a setting to the environment, the profile
// file, then the default (Resolve).
type Settings struct {
	// ConfigFile and Profile choose the TOML profile (empty:
	// TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE, then the SDK's defaults).
	ConfigFile, Profile string
	Address, Namespace  string

	TLSCAFile     string
	TLSCertFile   string
	TLSKeyFile    string
	TLSServerName string
	APIKey        string

	// GRPCCompression is "none" (also when empty) or "gzip": how the
	// processes' requests to Temporal, and so its answers, are compressed
	// (docs/decisions/0016-temporal-transport.md). No environment variable
	// or profile of the SDK's sets it: the flag's own variable does.
	GRPCCompression string
}

// Defaults of the settings that neither the flags, the environment nor the
// profile set.
const (
	DefaultAddress   = "127.0.0.1:7233"
	DefaultNamespace = "default"
	// DefaultGRPCCompression: see ParseCompression.
	DefaultGRPCCompression = "none"
)

// Redacted is s fit to print: the API key shows only whether it is set, a
// TLS path only when it is a path and not the key material itself.
func (s Settings) Redacted() Settings {
	s.APIKey = redacted(s.APIKey)
	s.TLSCAFile, s.TLSCertFile, s.TLSKeyFile = redactPath(s.TLSCAFile), redactPath(s.TLSCertFile), redactPath(s.TLSKeyFile)
	return s
}

// String keeps secrets out of anything that prints Settings with %v or %+v.
func (s Settings) String() string {
	type plain Settings // without this String: no recursion
	return fmt.Sprintf("%+v", plain(s.Redacted()))
}

// LogValue keeps secrets out of slog lines that log Settings.
func (s Settings) LogValue() slog.Value { return slog.StringValue(s.String()) }
