package options

import (
	"flag"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/temporalconn"
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
					TaskQueue:              "", // the cluster's own, ate-orchestrator-<cluster>
					Temporal:               temporalconn.Settings{GRPCCompression: "none"},
					MetricsBindAddress:     ":8443",
					MetricsSecure:          true,
					MetricsClusterLabel:    "cluster",
					HealthProbeBindAddress: ":8081",
					LogLevel:               "info",
					LogFormat:              "json",
				}, o)
			},
		},
		{
			// The Temporal connection's variables are read when it is
			// resolved (temporalconn), not into the flags.
			name: "environment overrides defaults",
			env: map[string]string{
				"KUBECONFIG":                    "/env/kubeconfig",
				"TEMPORAL_ADDRESS":              "temporal.env:7233",
				"TEMPORAL_TASK_QUEUE":           "env-tq",
				"TEMPORAL_API_KEY":              "env-key",
				"METRICS_BIND_ADDRESS":          ":9090",
				"METRICS_SECURE":                "false",
				"METRICS_CERT_DIR":              "/env/certs",
				"METRICS_CLUSTER_LABEL":         "k8s_cluster",
				"HEALTH_PROBE_BIND_ADDRESS":     ":9091",
				"LOG_LEVEL":                     "debug",
				"LOG_FORMAT":                    "text",
				"ATE_TEMPORAL_GRPC_COMPRESSION": "gzip",
			},
			check: func(t *testing.T, o Options) {
				require.Equal(t, Options{
					Kubeconfig:             "/env/kubeconfig",
					TaskQueue:              "env-tq",
					Temporal:               temporalconn.Settings{GRPCCompression: "gzip"},
					MetricsBindAddress:     ":9090",
					MetricsCertDir:         "/env/certs",
					MetricsClusterLabel:    "k8s_cluster",
					HealthProbeBindAddress: ":9091",
					LogLevel:               "debug",
					LogFormat:              "text",
				}, o)
			},
		},
		{
			name: "flags override environment",
			env:  map[string]string{"TEMPORAL_ADDRESS": "temporal.env:7233", "TEMPORAL_NAMESPACE": "env-ns", "KUBECONFIG": "/env/kc", "LOG_LEVEL": "error", "METRICS_SECURE": "false"},
			args: []string{
				"--kubeconfig=/flag/kc", "--temporal-address=temporal.flag:7233", "--temporal-namespace=flag-ns", "--cluster-name=flag-cluster",
				"--temporal-config-file=/flag/temporal.toml", "--temporal-profile=flag-profile",
				"--task-queue=flag-tq", "--temporal-tls-server-ca-cert-path=/flag/ca", "--temporal-tls-client-cert-path=/flag/cert",
				"--temporal-tls-client-key-path=/flag/key", "--temporal-tls-server-name=flag.example", "--temporal-api-key=flag-key",
				"--metrics-bind-address=0", "--metrics-secure=true", "--metrics-cert-dir=/flag/certs", "--metrics-cluster-label=kubernetes_cluster", "--health-probe-bind-address=:7000",
				"--log-level=warn", "--log-format=text", "--temporal-grpc-compression=gzip",
			},
			check: func(t *testing.T, o Options) {
				require.Equal(t, Options{
					Kubeconfig: "/flag/kc",
					Temporal: temporalconn.Settings{
						ConfigFile:      "/flag/temporal.toml",
						Profile:         "flag-profile",
						Address:         "temporal.flag:7233",
						Namespace:       "flag-ns",
						TLSCAFile:       "/flag/ca",
						TLSCertFile:     "/flag/cert",
						TLSKeyFile:      "/flag/key",
						TLSServerName:   "flag.example",
						APIKey:          "flag-key",
						GRPCCompression: "gzip",
					},
					ClusterName:            "flag-cluster",
					TaskQueue:              "flag-tq",
					MetricsBindAddress:     "0",
					MetricsSecure:          true,
					MetricsCertDir:         "/flag/certs",
					MetricsClusterLabel:    "kubernetes_cluster",
					HealthProbeBindAddress: ":7000",
					LogLevel:               "warn",
					LogFormat:              "text",
				}, o)
			},
		},
		{
			name: "empty environment variable keeps the default",
			env:  map[string]string{"TEMPORAL_TASK_QUEUE": "", "ATE_CLUSTER_NAME": "", "LOG_LEVEL": "", "METRICS_SECURE": ""},
			check: func(t *testing.T, o Options) {
				require.Empty(t, o.TaskQueue, "the cluster's own")
				require.Empty(t, o.ClusterName, "kube-system's UID")
				require.Equal(t, "info", o.LogLevel)
				require.True(t, o.MetricsSecure)
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

func TestMetricsSecureFromEnvironmentMustBeABool(t *testing.T) {
	clearEnv(t)
	t.Setenv("METRICS_SECURE", "yes please")
	var o Options
	o.BindFlags(flag.NewFlagSet("test", flag.ContinueOnError))
	o.TaskQueue = "tq"
	require.ErrorContains(t, o.Validate(), `METRICS_SECURE="yes please"`)
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
	valid := Options{TaskQueue: "tq"}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "valid", mutate: func(*Options) {}},
		{name: "no task queue: the cluster's own", mutate: func(o *Options) { o.TaskQueue = "" }},
		{name: "no cluster name: kube-system's UID", mutate: func(o *Options) { o.ClusterName = "" }},
		{name: "a cluster name", mutate: func(o *Options) { o.ClusterName = "prod-eu-1" }},
		{name: "a cluster name that cannot stand in a workflow ID", mutate: func(o *Options) { o.ClusterName = "prod/eu" },
			wantErr: `--cluster-name (ATE_CLUSTER_NAME): cluster name "prod/eu" is not a DNS label`},
		{name: "key content as the key path", mutate: func(o *Options) { o.Temporal.TLSKeyFile = "-----BEGIN EC PRIVATE KEY-----\nx" }, wantErr: "holds key material"},
		{name: "unknown log level", mutate: func(o *Options) { o.LogLevel = "verbose" }, wantErr: `--log-level (LOG_LEVEL) "verbose": want debug, info, warn or error`},
		{name: "unknown log format", mutate: func(o *Options) { o.LogFormat = "xml" }, wantErr: `--log-format (LOG_FORMAT) "xml": want json or text`},
		{name: "a metrics cluster label", mutate: func(o *Options) { o.MetricsClusterLabel = "k8s_cluster" }},
		{name: "a metrics cluster label Prometheus would not keep", mutate: func(o *Options) { o.MetricsClusterLabel = "k8s-cluster" },
			wantErr: `--metrics-cluster-label (METRICS_CLUSTER_LABEL): "k8s-cluster" is not a Prometheus label name`},
		{name: "no compression", mutate: func(o *Options) { o.Temporal.GRPCCompression = "none" }},
		{name: "gzip", mutate: func(o *Options) { o.Temporal.GRPCCompression = "gzip" }},
		{name: "an unknown compression", mutate: func(o *Options) { o.Temporal.GRPCCompression = "zstd" },
			wantErr: `--temporal-grpc-compression (ATE_TEMPORAL_GRPC_COMPRESSION) must be "none" or "gzip", got "zstd"`},
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
		unsetEnv(t, s.env)
	}
	for _, k := range []string{"METRICS_SECURE", "TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA",
		"TEMPORAL_TLS_SERVER_CA_CERT_DATA", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_CLIENT_AUTHORITY",
		"TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH"} {
		unsetEnv(t, k)
	}
	// No profile file of the machine's user.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
}

// unsetEnv unsets an environment variable for the test: the SDK tells an
// unset variable from an empty one.
func unsetEnv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "") // restored after the test
	require.NoError(t, os.Unsetenv(k))
}
