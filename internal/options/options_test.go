package options

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBindFlagsPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, o Options)
	}{
		{
			name: "built-in defaults",
			check: func(t *testing.T, o Options) {
				require.Equal(t, Options{
					TemporalAddress:        "127.0.0.1:7233",
					TemporalNamespace:      "default",
					TaskQueue:              "ate-orchestrator",
					MetricsBindAddress:     ":8080",
					HealthProbeBindAddress: ":8081",
				}, o)
			},
		},
		{
			name: "environment overrides defaults",
			env: map[string]string{
				"KUBECONFIG":                "/env/kubeconfig",
				"TEMPORAL_ADDRESS":          "temporal.env:7233",
				"TEMPORAL_NAMESPACE":        "env-ns",
				"TEMPORAL_TASK_QUEUE":       "env-tq",
				"TEMPORAL_TLS_CA":           "/env/ca.pem",
				"TEMPORAL_TLS_CERT":         "/env/cert.pem",
				"TEMPORAL_TLS_KEY":          "/env/key.pem",
				"TEMPORAL_TLS_SERVER_NAME":  "env.example",
				"TEMPORAL_API_KEY":          "env-key",
				"METRICS_BIND_ADDRESS":      ":9090",
				"HEALTH_PROBE_BIND_ADDRESS": ":9091",
			},
			check: func(t *testing.T, o Options) {
				require.Equal(t, Options{
					Kubeconfig:             "/env/kubeconfig",
					TemporalAddress:        "temporal.env:7233",
					TemporalNamespace:      "env-ns",
					TaskQueue:              "env-tq",
					TLSCAFile:              "/env/ca.pem",
					TLSCertFile:            "/env/cert.pem",
					TLSKeyFile:             "/env/key.pem",
					TLSServerName:          "env.example",
					APIKey:                 "env-key",
					MetricsBindAddress:     ":9090",
					HealthProbeBindAddress: ":9091",
				}, o)
			},
		},
		{
			name: "flags override environment",
			env:  map[string]string{"TEMPORAL_ADDRESS": "temporal.env:7233", "TEMPORAL_NAMESPACE": "env-ns", "KUBECONFIG": "/env/kc"},
			args: []string{
				"--kubeconfig=/flag/kc", "--temporal-address=temporal.flag:7233", "--temporal-namespace=flag-ns",
				"--task-queue=flag-tq", "--temporal-tls-ca=/flag/ca", "--temporal-tls-cert=/flag/cert",
				"--temporal-tls-key=/flag/key", "--temporal-tls-server-name=flag.example", "--temporal-api-key=flag-key",
				"--metrics-bind-address=0", "--health-probe-bind-address=:7000",
			},
			check: func(t *testing.T, o Options) {
				require.Equal(t, Options{
					Kubeconfig:             "/flag/kc",
					TemporalAddress:        "temporal.flag:7233",
					TemporalNamespace:      "flag-ns",
					TaskQueue:              "flag-tq",
					TLSCAFile:              "/flag/ca",
					TLSCertFile:            "/flag/cert",
					TLSKeyFile:             "/flag/key",
					TLSServerName:          "flag.example",
					APIKey:                 "flag-key",
					MetricsBindAddress:     "0",
					HealthProbeBindAddress: ":7000",
				}, o)
			},
		},
		{
			name: "empty environment variable keeps the default",
			env:  map[string]string{"TEMPORAL_ADDRESS": "", "TEMPORAL_TASK_QUEUE": ""},
			check: func(t *testing.T, o Options) {
				require.Equal(t, "127.0.0.1:7233", o.TemporalAddress)
				require.Equal(t, "ate-orchestrator", o.TaskQueue)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var o Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			tt.check(t, o)
		})
	}
}

// controller-runtime defines --kubeconfig on flag.CommandLine in an init;
// binding on a set that has it must not panic, and must fill Options.
func TestBindFlagsReusesExistingKubeconfigFlag(t *testing.T) {
	clearEnv(t)
	t.Setenv("KUBECONFIG", "/env/kc")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var theirs string
	fs.StringVar(&theirs, "kubeconfig", "", "theirs")

	var o Options
	o.BindFlags(fs)
	require.Equal(t, "/env/kc", o.Kubeconfig)
	require.Equal(t, "/env/kc", theirs)

	require.NoError(t, fs.Parse([]string{"--kubeconfig=/flag/kc"}))
	require.Equal(t, "/flag/kc", o.Kubeconfig)
	require.Equal(t, "/flag/kc", theirs)
}

func TestValidate(t *testing.T) {
	valid := Options{TemporalAddress: "a:1", TemporalNamespace: "ns", TaskQueue: "tq"}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "valid", mutate: func(*Options) {}},
		{name: "no address", mutate: func(o *Options) { o.TemporalAddress = "" }, wantErr: "--temporal-address (TEMPORAL_ADDRESS) must not be empty"},
		{name: "no namespace", mutate: func(o *Options) { o.TemporalNamespace = "" }, wantErr: "--temporal-namespace (TEMPORAL_NAMESPACE) must not be empty"},
		{name: "no task queue", mutate: func(o *Options) { o.TaskQueue = "" }, wantErr: "--task-queue (TEMPORAL_TASK_QUEUE) must not be empty"},
		{name: "cert without key", mutate: func(o *Options) { o.TLSCertFile = "c" }, wantErr: "must be set together"},
		{name: "key without cert", mutate: func(o *Options) { o.TLSKeyFile = "k" }, wantErr: "must be set together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.mutate(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func clearEnv(t *testing.T) {
	t.Helper()
	for _, s := range settings {
		t.Setenv(s.env, "") // restored after the test
	}
}
