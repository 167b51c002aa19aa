package temporalconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

func TestTemporalClientOptions(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCertificates(t, dir)
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))
	clearEnv(t)
	base := Settings{Address: "temporal:7233", Namespace: "ns"}

	tests := []struct {
		name    string
		mutate  func(*Settings)
		wantErr string
		check   func(t *testing.T, tc *tls.Config)
	}{
		{
			name:  "plaintext without TLS settings",
			check: func(t *testing.T, tc *tls.Config) { require.Nil(t, tc) },
		},
		{
			name:   "CA only",
			mutate: func(s *Settings) { s.TLSCAFile = ca },
			check: func(t *testing.T, tc *tls.Config) {
				require.NotNil(t, tc.RootCAs)
				require.Nil(t, tc.GetClientCertificate)
			},
		},
		{
			name:   "server name only enables TLS with system roots",
			mutate: func(s *Settings) { s.TLSServerName = "temporal.example" },
			check: func(t *testing.T, tc *tls.Config) {
				require.Equal(t, "temporal.example", tc.ServerName)
				require.Nil(t, tc.RootCAs)
			},
		},
		{
			name:   "mTLS",
			mutate: func(s *Settings) { s.TLSCAFile, s.TLSCertFile, s.TLSKeyFile = ca, cert, key },
			check: func(t *testing.T, tc *tls.Config) {
				c, err := tc.GetClientCertificate(nil)
				require.NoError(t, err)
				require.NotEmpty(t, c.Certificate)
			},
		},
		{name: "missing CA file", mutate: func(s *Settings) { s.TLSCAFile = filepath.Join(dir, "nope.pem") }, wantErr: "reading the Temporal server CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH)"},
		{name: "CA file without PEM", mutate: func(s *Settings) { s.TLSCAFile = garbage }, wantErr: "holds no PEM certificate"},
		{name: "cert without key", mutate: func(s *Settings) { s.TLSCertFile = cert }, wantErr: "must be set together"},
		{name: "unreadable key pair", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = cert, garbage }, wantErr: "loading the Temporal client certificate"},
		{name: "key does not match cert", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = ca, key }, wantErr: "loading the Temporal client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			if tt.mutate != nil {
				tt.mutate(&s)
			}
			opts, err := s.ClientOptions(quiet)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "temporal:7233", opts.HostPort)
			require.Equal(t, "ns", opts.Namespace)
			require.Nil(t, opts.Credentials)
			tt.check(t, opts.ConnectionOptions.TLS)
		})
	}
}

func TestTemporalClientOptionsAPIKey(t *testing.T) {
	clearEnv(t)
	s := Settings{Address: "temporal:7233", Namespace: "ns", APIKey: "secret"}
	opts, err := s.ClientOptions(quiet)
	require.NoError(t, err)
	require.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS, "an API key is never sent in plaintext: TLS with the system roots")
}

// quiet is a logger for tests that do not read the log.
var quiet = slog.New(slog.DiscardHandler)

// writeCertificates writes a CA and a client certificate and key it signed.
func writeCertificates(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caTmpl, &clientKey.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	require.NoError(t, err)

	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("client.pem", "CERTIFICATE", clientDER), write("client-key.pem", "EC PRIVATE KEY", keyDER)
}

// TestTemporalGRPCCompression: the setting reaches the SDK's connection
// options; no setting (Settings built by code) is no compression, the
// default the bench measured, not the SDK's gzip.
func TestTemporalGRPCCompression(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		setting string
		want    client.GrpcCompression
		wantErr string
	}{
		{setting: "", want: &client.GrpcCompressionNone{}},
		{setting: "none", want: &client.GrpcCompressionNone{}},
		{setting: "gzip", want: &client.GrpcCompressionGzip{}},
		{setting: "zstd", wantErr: `the Temporal gRPC compression must be "none" or "gzip", got "zstd"`},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			s := Settings{Address: "temporal:7233", GRPCCompression: tt.setting}
			opts, err := s.ClientOptions(quiet)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, opts.ConnectionOptions.GrpcCompression)
		})
	}
}

// clearEnv leaves the test no Temporal setting of the machine's: none of
// the variables the SDK reads, and no profile file of its user.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"TEMPORAL_CONFIG_FILE", "TEMPORAL_PROFILE", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY",
		"TEMPORAL_TLS", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_NAME",
		"TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA", "TEMPORAL_TLS_SERVER_CA_CERT_DATA", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION",
		"TEMPORAL_CLIENT_AUTHORITY", "TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH"} {
		t.Setenv(k, "") // restored after the test
		// The SDK tells an unset variable from an empty one.
		require.NoError(t, os.Unsetenv(k))
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
}
