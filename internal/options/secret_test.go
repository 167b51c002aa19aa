package options

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/temporalconn"
)

// The secrets every test below plants; none may appear in what the
// processes print.
const (
	apiKeySecret = "tk_live_8f3a9c-API-KEY-SECRET"
	// A key given as content instead of a path (TEMPORAL_TLS_CLIENT_KEY_PATH set to the
	// PEM itself).
	inlineKeySecret = "-----BEGIN EC PRIVATE KEY-----\nINLINE-KEY-SECRET\n-----END EC PRIVATE KEY-----\n"
)

// processFlags binds every flag a process binds, as the worker's main does.
func processFlags(out *bytes.Buffer) (*flag.FlagSet, *Options) {
	var o Options
	var w WorkerOptions
	var l LeaderElection
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(out)
	o.BindFlags(fs)
	w.BindFlags(fs)
	l.BindFlags(fs)
	return fs, &o
}

func TestSecretsNeverInUsage(t *testing.T) {
	tests := []struct {
		name, env, value, secret string
	}{
		{name: "API key", env: "TEMPORAL_API_KEY", value: apiKeySecret, secret: apiKeySecret},
		{name: "TLS key given as content", env: "TEMPORAL_TLS_CLIENT_KEY_PATH", value: inlineKeySecret, secret: "INLINE-KEY-SECRET"},
	}
	for _, tt := range tests {
		for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"-temporal-address"}} {
			t.Run(tt.name+" "+strings.Join(args, " "), func(t *testing.T) {
				clearEnv(t)
				t.Setenv(tt.env, tt.value)
				var out bytes.Buffer
				fs, o := processFlags(&out)
				require.Error(t, fs.Parse(args), "the usage is printed on a parse error or -h")
				require.Contains(t, out.String(), "-temporal-api-key", "the usage lists the flags")
				require.NotContains(t, out.String(), tt.secret)
				// The value is still taken from the environment.
				conn, err := o.Temporal.Resolve()
				var key string
				if conn.Profile.TLS != nil {
					key = conn.Profile.TLS.ClientKeyPath
				}
				require.Contains(t, []string{conn.Profile.APIKey, key}, tt.value)
				if err != nil {
					require.NotContains(t, err.Error(), tt.secret)
				}
			})
		}
	}
}

// A flag that is not secret keeps its environment default in the usage:
// hiding is for secrets only.
func TestUsageShowsPlainDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("METRICS_CERT_DIR", "/etc/ate/metrics-tls")
	var out bytes.Buffer
	fs, _ := processFlags(&out)
	require.Error(t, fs.Parse([]string{"-h"}))
	require.Contains(t, out.String(), "/etc/ate/metrics-tls")
	// The Temporal connection's flags name their standard variables.
	require.Contains(t, out.String(), "(env TEMPORAL_TLS_CLIENT_KEY_PATH)")
}

// The options' own checks, made before the connection is resolved, keep
// the secrets out of their errors too; temporalconn's tests cover the
// errors of the files themselves.
func TestSecretsNeverInErrors(t *testing.T) {
	clearEnv(t)
	base := Options{Temporal: temporalconn.Settings{Address: "temporal:7233", Namespace: "ns", APIKey: apiKeySecret}, TaskQueue: "tq"}

	tests := []struct {
		name    string
		mutate  func(*Options)
		secret  string
		wantErr string
	}{
		{name: "key content given as the path", mutate: func(o *Options) { o.Temporal.TLSCertFile, o.Temporal.TLSKeyFile = "/tls/cert.pem", inlineKeySecret },
			secret: "INLINE-KEY-SECRET", wantErr: "--temporal-tls-client-key-path holds key material, not a path"},
		{name: "API key with an invalid option", mutate: func(o *Options) { o.ClusterName = "Prod" },
			secret: apiKeySecret, wantErr: "--cluster-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.mutate(&o)
			_, err := o.TemporalClientOptions(quiet)
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), tt.secret)
			require.NotContains(t, err.Error(), apiKeySecret)
		})
	}
}

func TestOptionsPrintWithoutSecrets(t *testing.T) {
	o := Options{Temporal: temporalconn.Settings{Address: "temporal:7233", APIKey: apiKeySecret, TLSKeyFile: inlineKeySecret}}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("options", "options", o)
	for _, printed := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%v", &o), logged.String()} {
		require.Contains(t, printed, "temporal:7233")
		require.Contains(t, printed, "[redacted]", "a set secret shows as set")
		require.NotContains(t, printed, apiKeySecret)
		require.NotContains(t, printed, "INLINE-KEY-SECRET")
	}
	// The Temporal settings print among the others, as they did before
	// they had a package of their own.
	require.Equal(t, "{Kubeconfig: TemporalConfigFile: TemporalProfile: TemporalAddress:temporal:7233 TemporalNamespace: ClusterName: TaskQueue: TLSCAFile: TLSCertFile: TLSKeyFile:[redacted] TLSServerName: APIKey:[redacted] MetricsBindAddress: MetricsSecure:false MetricsCertDir: MetricsClusterLabel: HealthProbeBindAddress: PprofBindAddress: LogLevel: LogFormat: TracesExporter:}", o.String())
}
