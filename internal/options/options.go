// Package options is the command line of the product's binaries: each
// flag, the environment variable it defaults from, its built-in default,
// its help text, and the checks that name it when its value is wrong.
// Every flag defaults from an environment variable, so a Deployment can
// configure the processes with env and a developer with flags; an explicit
// flag wins over the environment, which wins over the built-in default.
//
// What a setting does lives with its concern, in a package that defines no
// flag: the Temporal connection in internal/temporalconn, logging in
// internal/logging, the leader election in internal/leader, tracing in
// internal/tracing, the metrics' cluster label in internal/metrics. This
// package binds the flags to their settings and composes them into a
// Process, what the worker and the starter set up alike.
//
// The Temporal connection's flags (address, namespace, API key, TLS) hold
// only what was given on the command line: internal/temporalconn resolves
// the connection as the Temporal SDK's contrib/envconfig and the temporal
// CLI do, a TOML profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), the
// standard TEMPORAL_* environment variables over it, then the flags over
// both.
package options

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"ate.dev/orchestrator/internal/logging"
	"ate.dev/orchestrator/internal/metrics"
	"ate.dev/orchestrator/internal/temporalconn"
	"ate.dev/orchestrator/internal/tracing"
	"ate.dev/orchestrator/internal/wfapi"
)

// Options holds the settings. The zero value is not useful: bind it with
// BindFlags (which also applies the environment and defaults) and parse.
//
// Temporal holds only what a flag (or the code) set: empty leaves a setting
// to the environment, the profile file, then the default
// (temporalconn.Settings.Resolve).
type Options struct {
	Kubeconfig string

	Temporal temporalconn.Settings
	// ClusterName names the Kubernetes cluster in every workflow ID, task
	// queue and search attribute; empty: the kube-system namespace's UID
	// (kube.ClusterIdentity).
	ClusterName string
	// TaskQueue is the task queue of the cluster's workflows; empty: the
	// cluster's own, ate-orchestrator-<cluster> (wfapi.ScopeOf).
	TaskQueue string

	MetricsBindAddress string
	// MetricsSecure serves /metrics over HTTPS, each request authenticated
	// (TokenReview) and authorised (SubjectAccessReview) by the API server.
	// Its flag defaults to true; the zero value (code that builds Options
	// itself, such as tests) serves plain HTTP.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for HTTPS, reloaded when
	// they change; empty: a self-signed certificate made at start.
	MetricsCertDir string
	// MetricsClusterLabel is the label that carries the cluster's name
	// (ClusterName, or the kube-system UID) on every series of /metrics,
	// so that a Prometheus shared by a fleet keeps the clusters apart;
	// empty (code that builds Options itself): metrics.DefaultClusterLabel.
	MetricsClusterLabel    string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof/ endpoints, for profiling;
	// empty (the default) serves none.
	PprofBindAddress string

	// LogLevel is debug, info, warn or error; LogFormat json or text.
	LogLevel, LogFormat string

	// TracesExporter turns OpenTelemetry tracing on ("otlp") or off
	// ("none"); empty: on when an OTLP endpoint is set (internal/tracing).
	TracesExporter string

	// envErr is an environment variable of the wrong form, reported by
	// Validate (BindFlags cannot fail).
	envErr error
}

// Defaults of the settings that have one and no home of their own (the
// Temporal connection's are temporalconn's, logging's logging's).
const (
	// DefaultMetricsBindAddress serves HTTPS (DefaultMetricsSecure).
	DefaultMetricsBindAddress     = ":8443"
	DefaultMetricsSecure          = true
	DefaultHealthProbeBindAddress = ":8081"
)

// setting is one flag, the environment variable it defaults from, and its
// built-in default.
type setting struct {
	flag, env, def, usage string
	dst                   func(*Options) *string
	// temporal settings are not defaulted from env at bind time: their
	// flag holds only an explicit value, and the environment and the
	// profile file are read as the SDK reads them
	// (temporalconn.Settings.Resolve).
	temporal bool
}

// secretFlags never show their value: a flag's default is its environment
// variable's value, and the flag package prints defaults in the usage that
// -h and every mistyped flag show (and a Deployment's logs keep).
var secretFlags = map[string]bool{"temporal-api-key": true}

var settings = []setting{
	{flag: "kubeconfig", env: "KUBECONFIG", usage: "path to a kubeconfig; empty: in-cluster config, then ~/.kube/config",
		dst: func(o *Options) *string { return &o.Kubeconfig }},
	{flag: "temporal-config-file", env: "TEMPORAL_CONFIG_FILE", temporal: true,
		usage: "TOML file of Temporal client profiles, the temporal CLI's; default: $XDG_CONFIG_HOME or ~/.config, then temporalio/temporal.toml, if it exists",
		dst:   func(o *Options) *string { return &o.Temporal.ConfigFile }},
	{flag: "temporal-profile", env: "TEMPORAL_PROFILE", temporal: true,
		usage: `profile of the Temporal config file to use; default "default" (which may be absent)`,
		dst:   func(o *Options) *string { return &o.Temporal.Profile }},
	{flag: "temporal-address", env: "TEMPORAL_ADDRESS", temporal: true,
		usage: "Temporal frontend host:port; default: the profile's, then " + temporalconn.DefaultAddress,
		dst:   func(o *Options) *string { return &o.Temporal.Address }},
	{flag: "temporal-namespace", env: "TEMPORAL_NAMESPACE", temporal: true,
		usage: "Temporal namespace; default: the profile's, then " + temporalconn.DefaultNamespace,
		dst:   func(o *Options) *string { return &o.Temporal.Namespace }},
	{flag: "cluster-name", env: "ATE_CLUSTER_NAME",
		usage: "name of this Kubernetes cluster (a DNS label) in every workflow ID, task queue and search attribute, unique among the clusters that share the Temporal namespace; default: the UID of the kube-system namespace",
		dst:   func(o *Options) *string { return &o.ClusterName }},
	{flag: "task-queue", env: "TEMPORAL_TASK_QUEUE",
		usage: "Temporal task queue of the orchestrator's workflows and activities, never shared with another cluster; default: ate-orchestrator-<cluster>",
		dst:   func(o *Options) *string { return &o.TaskQueue }},
	{flag: "temporal-tls-server-ca-cert-path", env: "TEMPORAL_TLS_SERVER_CA_CERT_PATH", temporal: true,
		usage: "PEM file of the CA that signed the Temporal server's certificate; enables TLS",
		dst:   func(o *Options) *string { return &o.Temporal.TLSCAFile }},
	{flag: "temporal-tls-client-cert-path", env: "TEMPORAL_TLS_CLIENT_CERT_PATH", temporal: true,
		usage: "PEM client certificate for mTLS to Temporal (with --temporal-tls-client-key-path); enables TLS",
		dst:   func(o *Options) *string { return &o.Temporal.TLSCertFile }},
	{flag: "temporal-tls-client-key-path", env: "TEMPORAL_TLS_CLIENT_KEY_PATH", temporal: true,
		usage: "PEM private key of --temporal-tls-client-cert-path",
		dst:   func(o *Options) *string { return &o.Temporal.TLSKeyFile }},
	{flag: "temporal-tls-server-name", env: "TEMPORAL_TLS_SERVER_NAME", temporal: true,
		usage: "server name to verify the Temporal server's certificate against; enables TLS",
		dst:   func(o *Options) *string { return &o.Temporal.TLSServerName }},
	{flag: "temporal-api-key", env: "TEMPORAL_API_KEY", temporal: true,
		usage: "API key for Temporal (e.g. Temporal Cloud); implies TLS; its value is never shown",
		dst:   func(o *Options) *string { return &o.Temporal.APIKey }},
	{flag: "temporal-grpc-compression", env: "ATE_TEMPORAL_GRPC_COMPRESSION", def: temporalconn.DefaultGRPCCompression,
		usage: `compression of the gRPC requests to Temporal and of its answers: "none" (CPU saved on both ends, measured on the bench) or "gzip" (the SDK's default: fewer bytes, for a slow or metered link)`,
		dst:   func(o *Options) *string { return &o.Temporal.GRPCCompression }},
	{flag: "metrics-bind-address", env: "METRICS_BIND_ADDRESS", def: DefaultMetricsBindAddress, usage: `address of the Prometheus metrics endpoint; "0" disables it`,
		dst: func(o *Options) *string { return &o.MetricsBindAddress }},
	{flag: "metrics-cert-dir", env: "METRICS_CERT_DIR", usage: "directory of tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change; empty: a self-signed certificate",
		dst: func(o *Options) *string { return &o.MetricsCertDir }},
	{flag: "metrics-cluster-label", env: "METRICS_CLUSTER_LABEL", def: metrics.DefaultClusterLabel,
		usage: "label of the cluster's name (--cluster-name, or the kube-system UID) on every series of /metrics; what deploy/monitoring's clusterLabel names",
		dst:   func(o *Options) *string { return &o.MetricsClusterLabel }},
	{flag: "health-probe-bind-address", env: "HEALTH_PROBE_BIND_ADDRESS", def: DefaultHealthProbeBindAddress, usage: `address of the /healthz and /readyz endpoints; "0" disables them`,
		dst: func(o *Options) *string { return &o.HealthProbeBindAddress }},
	{flag: "pprof-bind-address", env: "PPROF_BIND_ADDRESS", usage: `address of Go's /debug/pprof/ profiling endpoints, plain HTTP and unauthenticated: bind to loopback; empty or "0": none`,
		dst: func(o *Options) *string { return &o.PprofBindAddress }},
	{flag: "log-level", env: "LOG_LEVEL", def: logging.DefaultLevel, usage: "least severe log lines written: debug, info, warn or error",
		dst: func(o *Options) *string { return &o.LogLevel }},
	{flag: "log-format", env: "LOG_FORMAT", def: logging.DefaultFormat, usage: "log line format on stderr: json or text",
		dst: func(o *Options) *string { return &o.LogFormat }},
	{flag: "otel-traces-exporter", env: "OTEL_TRACES_EXPORTER",
		usage: `"otlp" exports traces over OTLP, configured by the standard OTEL_EXPORTER_OTLP_* variables; "none" or empty: no tracing, unless OTEL_EXPORTER_OTLP_ENDPOINT is set`,
		dst:   func(o *Options) *string { return &o.TracesExporter }},
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable, then from its built-in default (the Temporal connection's
// flags excepted: see Options).
//
// controller-runtime registers its own --kubeconfig on flag.CommandLine;
// when fs already has that flag, BindFlags makes it set both.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	for _, s := range settings {
		dst := s.dst(o)
		def := s.def
		if v, ok := os.LookupEnv(s.env); ok && v != "" && !s.temporal {
			def = v
		}
		usage := fmt.Sprintf("%s (env %s)", s.usage, s.env)
		if existing := fs.Lookup(s.flag); existing != nil {
			*dst = def
			_ = existing.Value.Set(def)
			existing.DefValue = def
			existing.Usage = usage
			existing.Value = teeValue{Value: existing.Value, dst: dst}
		} else {
			fs.StringVar(dst, s.flag, def, usage)
		}
		if secretFlags[s.flag] || temporalconn.LooksLikeKeyMaterial(def) {
			// An empty DefValue is the zero value: the usage prints no
			// default at all, so it does not even tell that one is set.
			fs.Lookup(s.flag).DefValue = ""
		}
	}
	o.MetricsSecure = DefaultMetricsSecure
	if v, ok := os.LookupEnv("METRICS_SECURE"); ok && v != "" {
		b, err := parseBool(v)
		if err != nil {
			o.envErr = fmt.Errorf("METRICS_SECURE=%q: %w", v, err)
		} else {
			o.MetricsSecure = b
		}
	}
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve /metrics over HTTPS, each request authenticated and authorised by the Kubernetes API server (TokenReview, SubjectAccessReview: get on the non-resource URL /metrics); false: plain HTTP, for loopback (env METRICS_SECURE)")
}

// String keeps secrets out of anything that prints Options with %v or %+v.
// It prints the Temporal settings among the others, as before they had a
// package of their own.
func (o Options) String() string {
	t := o.Temporal.Redacted()
	return fmt.Sprintf("{Kubeconfig:%s TemporalConfigFile:%s TemporalProfile:%s TemporalAddress:%s TemporalNamespace:%s ClusterName:%s TaskQueue:%s TLSCAFile:%s TLSCertFile:%s TLSKeyFile:%s TLSServerName:%s APIKey:%s MetricsBindAddress:%s MetricsSecure:%t MetricsCertDir:%s MetricsClusterLabel:%s HealthProbeBindAddress:%s PprofBindAddress:%s LogLevel:%s LogFormat:%s TracesExporter:%s}",
		o.Kubeconfig, t.ConfigFile, t.Profile, t.Address, t.Namespace, o.ClusterName, o.TaskQueue, t.TLSCAFile, t.TLSCertFile,
		t.TLSKeyFile, t.TLSServerName, t.APIKey, o.MetricsBindAddress, o.MetricsSecure, o.MetricsCertDir, o.MetricsClusterLabel, o.HealthProbeBindAddress, o.PprofBindAddress,
		o.LogLevel, o.LogFormat, o.TracesExporter)
}

// LogValue keeps secrets out of slog lines that log Options.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// teeValue sets a flag's original value and one of ours.
type teeValue struct {
	flag.Value
	dst *string
}

func (t teeValue) Set(s string) error {
	if err := t.Value.Set(s); err != nil {
		return err
	}
	*t.dst = s
	return nil
}

// Validate checks the settings every process needs that the command line
// and the environment give; the Temporal connection, which a profile file
// may complete, is checked when it is resolved
// (temporalconn.Settings.Resolve).
func (o *Options) Validate() error {
	errs := []error{o.envErr}
	if o.ClusterName != "" {
		if err := wfapi.Cluster(o.ClusterName).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-name (ATE_CLUSTER_NAME): %w", err))
		}
	}
	if o.MetricsClusterLabel != "" {
		if err := metrics.ValidateLabelName(o.MetricsClusterLabel); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-cluster-label (METRICS_CLUSTER_LABEL): %w", err))
		}
	}
	if temporalconn.LooksLikeKeyMaterial(o.Temporal.TLSKeyFile) {
		errs = append(errs, errors.New("--temporal-tls-client-key-path holds key material, not a path: mount the key as a file and give its path"))
	}
	if temporalconn.LooksLikeKeyMaterial(o.Temporal.TLSCertFile) || temporalconn.LooksLikeKeyMaterial(o.Temporal.TLSCAFile) {
		errs = append(errs, errors.New("--temporal-tls-client-cert-path and --temporal-tls-server-ca-cert-path take paths, not PEM content"))
	}
	if _, err := temporalconn.ParseCompression(o.Temporal.GRPCCompression); err != nil {
		errs = append(errs, fmt.Errorf("--temporal-grpc-compression (ATE_TEMPORAL_GRPC_COMPRESSION) %w", err))
	}
	if _, err := o.logLevel(); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.logFormat(); err != nil {
		errs = append(errs, err)
	}
	if _, err := tracing.Exporter(o.TracesExporter, os.Getenv); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
