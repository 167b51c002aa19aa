package promquery

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	srv := httptest.NewTLSServer(nil) // only for a real certificate
	srv.Close()
	ca := file("ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	token := file("token", "abc\n")
	empty := file("empty", " \n")
	notPEM := file("not-pem", "hello")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // substrings; none: valid
	}{
		{name: "no Prometheus", cfg: Config{}},
		{name: "http", cfg: Config{URL: "http://prometheus.monitoring:9090"}},
		{name: "https with a path prefix, a token and a CA", cfg: Config{URL: "https://example.com/prometheus", BearerTokenFile: token, CAFile: ca}},
		{name: "http with a token", cfg: Config{URL: "http://127.0.0.1:9090", BearerTokenFile: token}},
		{
			name:    "a token without URL",
			cfg:     Config{BearerTokenFile: token},
			wantErr: []string{"--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE) set without --prometheus-url (PROMETHEUS_URL)"},
		},
		{
			name:    "a token and a CA without URL",
			cfg:     Config{BearerTokenFile: token, CAFile: ca},
			wantErr: []string{"--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE) and --prometheus-ca-file (PROMETHEUS_CA_FILE) set without --prometheus-url"},
		},
		{
			name:    "no scheme",
			cfg:     Config{URL: "prometheus:9090"},
			wantErr: []string{"--prometheus-url (PROMETHEUS_URL) must be an http or https URL"},
		},
		{
			name:    "another scheme",
			cfg:     Config{URL: "ftp://prometheus"},
			wantErr: []string{"--prometheus-url (PROMETHEUS_URL) must be an http or https URL", `"ftp://prometheus"`},
		},
		{
			name:    "no host",
			cfg:     Config{URL: "http:///api"},
			wantErr: []string{"--prometheus-url (PROMETHEUS_URL) must be an http or https URL"},
		},
		{
			name:    "not a URL",
			cfg:     Config{URL: "http://[::1"},
			wantErr: []string{"--prometheus-url (PROMETHEUS_URL) must be an http or https URL"},
		},
		{
			name:    "a query",
			cfg:     Config{URL: "http://prometheus:9090/?x=1"},
			wantErr: []string{"--prometheus-url (PROMETHEUS_URL) must have no query or fragment"},
		},
		{
			name:    "a password is not repeated",
			cfg:     Config{URL: "ftp://u:hunter2@prometheus"},
			wantErr: []string{`"ftp://u:xxxxx@prometheus"`},
		},
		{
			name:    "a token file that does not exist",
			cfg:     Config{URL: "http://prometheus:9090", BearerTokenFile: missing},
			wantErr: []string{"--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE): reading the bearer token", "no such file"},
		},
		{
			name:    "an empty token file",
			cfg:     Config{URL: "http://prometheus:9090", BearerTokenFile: empty},
			wantErr: []string{"--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE): the bearer token file " + empty + " is empty"},
		},
		{
			name:    "a CA file that does not exist",
			cfg:     Config{URL: "https://prometheus:9090", CAFile: missing},
			wantErr: []string{"--prometheus-ca-file (PROMETHEUS_CA_FILE): reading the CA bundle", "no such file"},
		},
		{
			name:    "a CA file without certificates",
			cfg:     Config{URL: "https://prometheus:9090", CAFile: notPEM},
			wantErr: []string{"--prometheus-ca-file (PROMETHEUS_CA_FILE): the CA bundle " + notPEM + " holds no PEM certificate"},
		},
		{
			name:    "a CA for an http URL",
			cfg:     Config{URL: "http://prometheus:9090", CAFile: ca},
			wantErr: []string{"--prometheus-ca-file (PROMETHEUS_CA_FILE) applies to an https --prometheus-url (PROMETHEUS_URL), got http://prometheus:9090"},
		},
		{
			name: "every file error at once",
			cfg:  Config{URL: "https://prometheus:9090", BearerTokenFile: missing, CAFile: notPEM},
			wantErr: []string{
				"--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE): reading the bearer token",
				"--prometheus-ca-file (PROMETHEUS_CA_FILE): the CA bundle",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}
