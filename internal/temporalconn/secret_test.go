package temporalconn

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The secrets the tests below plant; none may appear in what is printed.
const (
	apiKeySecret = "tk_live_8f3a9c-API-KEY-SECRET"
	// A key given as content instead of a path (TEMPORAL_TLS_CLIENT_KEY_PATH set to the
	// PEM itself).
	inlineKeySecret = "-----BEGIN EC PRIVATE KEY-----\nINLINE-KEY-SECRET\n-----END EC PRIVATE KEY-----\n"
	// The content of a key file that is not a valid key.
	keyFileSecret = "KEY-FILE-CONTENT-SECRET"
)

func TestSecretsNeverInErrors(t *testing.T) {
	dir := t.TempDir()
	ca, cert, _ := writeCertificates(t, dir)
	badKey := filepath.Join(dir, "bad-key.pem")
	require.NoError(t, os.WriteFile(badKey, []byte(keyFileSecret), 0o600))
	pemBadKey := filepath.Join(dir, "pem-bad-key.pem")
	require.NoError(t, os.WriteFile(pemBadKey,
		[]byte("-----BEGIN EC PRIVATE KEY-----\n"+keyFileSecret+"\n-----END EC PRIVATE KEY-----\n"), 0o600))
	clearEnv(t)
	base := Settings{Address: "temporal:7233", Namespace: "ns", APIKey: apiKeySecret}

	tests := []struct {
		name    string
		mutate  func(*Settings)
		env     map[string]string
		secret  string
		wantErr string
	}{
		{name: "key file that is no PEM", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = cert, badKey },
			secret: keyFileSecret, wantErr: "loading the Temporal client certificate"},
		{name: "key file with a broken PEM block", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = cert, pemBadKey },
			secret: keyFileSecret, wantErr: "loading the Temporal client certificate"},
		{name: "certificate given as the key", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = cert, ca },
			secret: apiKeySecret, wantErr: "loading the Temporal client certificate"},
		{name: "key content given as the path", mutate: func(s *Settings) { s.TLSCertFile, s.TLSKeyFile = cert, inlineKeySecret },
			secret: "INLINE-KEY-SECRET", wantErr: "holds key material, not a path"},
		{name: "key content given as the path, from the environment", mutate: func(s *Settings) { s.TLSCertFile = cert },
			env: map[string]string{"TEMPORAL_TLS_CLIENT_KEY_PATH": inlineKeySecret}, secret: "INLINE-KEY-SECRET", wantErr: "holds key material, not a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			s := base
			tt.mutate(&s)
			_, err := s.ClientOptions(quiet)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), tt.secret)
			require.NotContains(t, err.Error(), apiKeySecret)
		})
	}
}

func TestSettingsPrintWithoutSecrets(t *testing.T) {
	s := Settings{Address: "temporal:7233", APIKey: apiKeySecret, TLSKeyFile: inlineKeySecret, TLSCertFile: "/tls/cert.pem"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("settings", "settings", s)
	for _, printed := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%v", &s), logged.String()} {
		require.Contains(t, printed, "temporal:7233")
		require.Contains(t, printed, "/tls/cert.pem", "a path is no secret")
		require.Contains(t, printed, "[redacted]", "a set secret shows as set")
		require.NotContains(t, printed, apiKeySecret)
		require.NotContains(t, printed, "INLINE-KEY-SECRET")
	}
}

func TestLooksLikeKeyMaterial(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"", false},
		{"/etc/temporal/tls.key", false},
		{inlineKeySecret, true},
		{"-----BEGIN PRIVATE KEY-----", true},
		{"two\nlines", true},
		{"carriage\rreturn", true},
	} {
		require.Equal(t, tc.want, LooksLikeKeyMaterial(tc.v), "%q", tc.v)
	}
}
