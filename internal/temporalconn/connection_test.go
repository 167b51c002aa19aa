package temporalconn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// profiles is a config file as the temporal CLI writes it
// (`temporal config set --profile prod --prop address --value ...`).
const profiles = `
[profile.default]
address = "file-default:7233"
namespace = "file-default-ns"

[profile.prod]
address = "file-prod:7233"
namespace = "file-prod-ns"
api_key = "file-key"

[profile.prod.tls]
server_name = "file.example"
server_ca_cert_path = "/file/ca.pem"
`

func writeProfiles(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// TestTemporalConnectionPrecedence: an explicit setting (a flag) wins over
// the standard environment variable, which wins over the profile file,
// which wins over the default; the file and the profile are chosen by
// flag, then by TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE, then by the
// SDK's defaults.
func TestTemporalConnectionPrecedence(t *testing.T) {
	type want struct {
		address, namespace, apiKey, serverName, ca string
		tls                                        bool
	}
	tests := []struct {
		name string
		// file is written and named by TEMPORAL_CONFIG_FILE unless
		// fileAtDefaultPath, where the SDK looks without it.
		file              string
		fileAtDefaultPath bool
		env               map[string]string
		// set is what the flags set; a ConfigFile of "FILE" names file.
		set     Settings
		want    want
		wantErr string
	}{
		{name: "defaults without file, environment or flags",
			want: want{address: "127.0.0.1:7233", namespace: "default"}},
		{name: "the file's default profile", file: profiles,
			want: want{address: "file-default:7233", namespace: "file-default-ns"}},
		{name: "the file at the CLI's default path", file: profiles, fileAtDefaultPath: true,
			want: want{address: "file-default:7233", namespace: "file-default-ns"}},
		{name: "a profile named by TEMPORAL_PROFILE", file: profiles, env: map[string]string{"TEMPORAL_PROFILE": "prod"},
			want: want{address: "file-prod:7233", namespace: "file-prod-ns", apiKey: "file-key", serverName: "file.example", ca: "/file/ca.pem", tls: true}},
		{name: "a profile named by flag over TEMPORAL_PROFILE", file: profiles, env: map[string]string{"TEMPORAL_PROFILE": "nope"},
			set:  Settings{Profile: "prod"},
			want: want{address: "file-prod:7233", namespace: "file-prod-ns", apiKey: "file-key", serverName: "file.example", ca: "/file/ca.pem", tls: true}},
		{name: "environment over the file", file: profiles,
			env:  map[string]string{"TEMPORAL_PROFILE": "prod", "TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_TLS_SERVER_NAME": "env.example"},
			want: want{address: "env:7233", namespace: "file-prod-ns", apiKey: "file-key", serverName: "env.example", ca: "/file/ca.pem", tls: true}},
		{name: "flags over the environment and the file", file: profiles,
			env:  map[string]string{"TEMPORAL_PROFILE": "prod", "TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			set:  Settings{Address: "flag:7233", APIKey: "flag-key", TLSCAFile: "/flag/ca.pem", TLSServerName: "flag.example"},
			want: want{address: "flag:7233", namespace: "env-ns", apiKey: "flag-key", serverName: "flag.example", ca: "/flag/ca.pem", tls: true}},
		{name: "an empty variable clears the file's value (the SDK's rule); the default applies", file: profiles,
			env:  map[string]string{"TEMPORAL_NAMESPACE": ""},
			want: want{address: "file-default:7233", namespace: "default"}},
		{name: "a TEMPORAL_TLS_* variable set, even empty, turns TLS on (the SDK's rule)",
			env:  map[string]string{"TEMPORAL_TLS_SERVER_NAME": ""},
			want: want{address: "127.0.0.1:7233", namespace: "default", tls: true}},
		{name: "TEMPORAL_TLS=false turns the profile's TLS off", file: profiles,
			env:  map[string]string{"TEMPORAL_PROFILE": "prod", "TEMPORAL_TLS": "false"},
			want: want{address: "file-prod:7233", namespace: "file-prod-ns", apiKey: "file-key", serverName: "file.example", ca: "/file/ca.pem", tls: false}},
		{name: "a file named by flag over TEMPORAL_CONFIG_FILE", file: profiles,
			env:  map[string]string{"TEMPORAL_CONFIG_FILE": "/no/such/file.toml"},
			set:  Settings{ConfigFile: "FILE"},
			want: want{address: "file-default:7233", namespace: "file-default-ns"}},
		{name: "a missing file is no error", env: map[string]string{"TEMPORAL_CONFIG_FILE": "/no/such/file.toml"},
			want: want{address: "127.0.0.1:7233", namespace: "default"}},
		{name: "a named profile the file lacks is an error", file: profiles, env: map[string]string{"TEMPORAL_PROFILE": "staging"},
			wantErr: `loading the Temporal client profile "staging"`},
		{name: "a file that is no TOML is an error", file: "[profile.default\naddress=",
			wantErr: "failed parsing config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			set := tt.set
			if tt.file != "" {
				if tt.fileAtDefaultPath {
					dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "temporalio")
					require.NoError(t, os.MkdirAll(dir, 0o700))
					writeProfiles(t, dir, tt.file)
				} else {
					path := writeProfiles(t, t.TempDir(), tt.file)
					if _, set := tt.env["TEMPORAL_CONFIG_FILE"]; !set {
						t.Setenv("TEMPORAL_CONFIG_FILE", path)
					}
					if set.ConfigFile == "FILE" {
						set.ConfigFile = path
					}
				}
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			conn, err := set.Resolve()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			p := conn.Profile
			got := want{address: p.Address, namespace: p.Namespace, apiKey: p.APIKey}
			if p.TLS != nil {
				got.serverName, got.ca, got.tls = p.TLS.ServerName, p.TLS.ServerCACertPath, !p.TLS.Disabled
			}
			require.Equal(t, tt.want, got)

			// The client options say the same (the CA files do not exist:
			// only the cases without a CA build them).
			if tt.want.ca == "" {
				opts, err := set.ClientOptions(quiet)
				require.NoError(t, err)
				require.Equal(t, tt.want.address, opts.HostPort)
				require.Equal(t, tt.want.namespace, opts.Namespace)
				require.Equal(t, tt.want.apiKey != "", opts.Credentials != nil)
			}
		})
	}
}

// What the SDK reads that the product has no flag for still applies: the
// certificate and key as data, and the profile's gRPC metadata.
func TestTemporalSDKOnlySettings(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	_, cert, key := writeCertificates(t, dir)
	certPEM, err := os.ReadFile(cert)
	require.NoError(t, err)
	keyPEM, err := os.ReadFile(key)
	require.NoError(t, err)
	t.Setenv("TEMPORAL_CONFIG_FILE", writeProfiles(t, dir, "[profile.default.grpc_meta]\nx-tenant = \"ate\"\n"))
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_DATA", string(certPEM))
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_DATA", string(keyPEM))
	var s Settings
	opts, err := s.ClientOptions(quiet)
	require.NoError(t, err)
	require.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
	require.NotNil(t, opts.HeadersProvider)
	headers, err := opts.HeadersProvider.GetHeaders(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x-tenant": "ate"}, headers)

	// Data and a path of the same thing: refused, as the SDK refuses it.
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", key)
	_, err = s.ClientOptions(quiet)
	require.ErrorContains(t, err, "both as a path and as data")
}
