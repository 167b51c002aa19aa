// Package secrettest runs a process's real main with secrets planted in
// its environment and checks that none of them is printed: the usage of -h
// and of a mistyped flag, and the error of a bad key file.
package secrettest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// mainEnv, set in a test binary's environment, makes it run the process's
// main instead of its tests (see RunMainIfAsked).
const mainEnv = "ATE_SECRETTEST_RUN_MAIN"

// RunMainIfAsked runs main and reports true when the test binary was
// started by CheckSecretsNeverPrinted; a TestMain calls it first.
func RunMainIfAsked(main func()) bool {
	if os.Getenv(mainEnv) != "1" {
		return false
	}
	main()
	return true
}

const (
	apiKey     = "tk_live_5d1e-API-KEY-NEVER-PRINTED"
	keyContent = "KEY-FILE-CONTENT-NEVER-PRINTED"
)

// CheckSecretsNeverPrinted re-runs the test binary as the process, whose
// TestMain calls RunMainIfAsked, with TEMPORAL_API_KEY set and a key file
// that is no key, and checks the output of each run.
func CheckSecretsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(key, []byte("-----BEGIN EC PRIVATE KEY-----\n"+keyContent+"\n-----END EC PRIVATE KEY-----\n"), 0o600))
	// A certificate file that is no certificate either: the pair fails to
	// load at start-up, before any connection is tried.
	cert := filepath.Join(dir, "tls.crt")
	require.NoError(t, os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o600))
	// A kubeconfig, so that the process gets as far as the Temporal options.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
`), 0o600))
	inline := "-----BEGIN EC PRIVATE KEY-----\n" + keyContent + "\n-----END EC PRIVATE KEY-----\n"
	// A profile file (the temporal CLI's TOML) with the key's content as
	// its path.
	profile := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(profile, []byte("[profile.default.tls]\nclient_cert_path = \""+cert+"\"\nclient_key_path = \"\"\"\n"+inline+"\"\"\"\n"), 0o600))

	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "-h", args: []string{"-h"}, want: "-temporal-api-key"},
		{name: "mistyped flag", args: []string{"-temporal-adress", "x"}, want: "flag provided but not defined"},
		{name: "bad key file", args: []string{"-temporal-tls-client-cert-path", cert, "-temporal-tls-client-key-path", key}, want: "loading the Temporal client certificate"},
		{name: "key content as the path", env: []string{"TEMPORAL_TLS_CLIENT_CERT_PATH=" + cert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + inline}, want: "holds key material"},
		{name: "key content in a profile file", env: []string{"TEMPORAL_CONFIG_FILE=" + profile}, want: "holds key material"},
		{name: "-h with key content as the path", args: []string{"-h"}, env: []string{"TEMPORAL_TLS_CLIENT_KEY_PATH=" + inline}, want: "-temporal-tls-client-key-path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.args...)
			cmd.Env = append(os.Environ(), mainEnv+"=1", "TEMPORAL_API_KEY="+apiKey,
				// Nothing is dialled: every case fails before.
				"TEMPORAL_ADDRESS=127.0.0.1:1", "KUBECONFIG="+kubeconfig, "METRICS_BIND_ADDRESS=0", "HEALTH_PROBE_BIND_ADDRESS=0")
			cmd.Env = append(cmd.Env, tt.env...)
			// -h exits 0, the others non-zero: all of them stop.
			out, _ := cmd.CombinedOutput()
			require.NotNil(t, cmd.ProcessState, "the process ran: %s", out)
			require.Contains(t, string(out), tt.want)
			require.NotContains(t, string(out), apiKey)
			require.NotContains(t, string(out), keyContent)
		})
	}
}
