// Package options is the configuration shared by the worker and starter
// binaries: where the Kubernetes API server and the Temporal server are,
// how to authenticate to Temporal, and where to serve metrics and health
// probes. Every flag defaults from an environment variable, so a
// Deployment can configure the processes with env and a developer with
// flags; an explicit flag wins over the environment, which wins over the
// built-in default.
package options

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"ate.dev/orchestrator/internal/tracing"
)

// Options holds the settings. The zero value is not useful: bind it with
// BindFlags (which also applies the environment and defaults) and parse.
type Options struct {
	Kubeconfig string

	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string

	TLSCAFile     string
	TLSCertFile   string
	TLSKeyFile    string
	TLSServerName string
	APIKey        string

	MetricsBindAddress     string
	HealthProbeBindAddress string

	// TracesExporter turns OpenTelemetry tracing on ("otlp") or off
	// ("none"); empty: on when an OTLP endpoint is set (internal/tracing).
	TracesExporter string
}

// Defaults of the settings that have one.
const (
	DefaultTemporalAddress   = "127.0.0.1:7233"
	DefaultTemporalNamespace = "default"
	// DefaultTaskQueue is the task queue the worker polls and the starter
	// starts on.
	DefaultTaskQueue              = "ate-orchestrator"
	DefaultMetricsBindAddress     = ":8080"
	DefaultHealthProbeBindAddress = ":8081"
)

// setting is one flag, the environment variable it defaults from, and its
// built-in default.
type setting struct {
	flag, env, def, usage string
	dst                   func(*Options) *string
}

// secretFlags never show their value: a flag's default is its environment
// variable's value, and the flag package prints defaults in the usage that
// -h and every mistyped flag show (and a Deployment's logs keep).
var secretFlags = map[string]bool{"temporal-api-key": true}

var settings = []setting{
	{"kubeconfig", "KUBECONFIG", "", "path to a kubeconfig; empty: in-cluster config, then ~/.kube/config",
		func(o *Options) *string { return &o.Kubeconfig }},
	{"temporal-address", "TEMPORAL_ADDRESS", DefaultTemporalAddress, "Temporal frontend host:port",
		func(o *Options) *string { return &o.TemporalAddress }},
	{"temporal-namespace", "TEMPORAL_NAMESPACE", DefaultTemporalNamespace, "Temporal namespace",
		func(o *Options) *string { return &o.TemporalNamespace }},
	{"task-queue", "TEMPORAL_TASK_QUEUE", DefaultTaskQueue, "Temporal task queue of the orchestrator's workflows and activities",
		func(o *Options) *string { return &o.TaskQueue }},
	{"temporal-tls-ca", "TEMPORAL_TLS_CA", "", "PEM file of the CA that signed the Temporal server's certificate; enables TLS",
		func(o *Options) *string { return &o.TLSCAFile }},
	{"temporal-tls-cert", "TEMPORAL_TLS_CERT", "", "PEM client certificate for mTLS to Temporal (with --temporal-tls-key); enables TLS",
		func(o *Options) *string { return &o.TLSCertFile }},
	{"temporal-tls-key", "TEMPORAL_TLS_KEY", "", "PEM private key of --temporal-tls-cert",
		func(o *Options) *string { return &o.TLSKeyFile }},
	{"temporal-tls-server-name", "TEMPORAL_TLS_SERVER_NAME", "", "server name to verify the Temporal server's certificate against; enables TLS",
		func(o *Options) *string { return &o.TLSServerName }},
	{"temporal-api-key", "TEMPORAL_API_KEY", "", "API key for Temporal (e.g. Temporal Cloud); implies TLS; its value is never shown",
		func(o *Options) *string { return &o.APIKey }},
	{"metrics-bind-address", "METRICS_BIND_ADDRESS", DefaultMetricsBindAddress, `address of the Prometheus metrics endpoint; "0" disables it`,
		func(o *Options) *string { return &o.MetricsBindAddress }},
	{"health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS", DefaultHealthProbeBindAddress, `address of the /healthz and /readyz endpoints; "0" disables them`,
		func(o *Options) *string { return &o.HealthProbeBindAddress }},
	{"otel-traces-exporter", "OTEL_TRACES_EXPORTER", "", `"otlp" exports traces over OTLP, configured by the standard OTEL_EXPORTER_OTLP_* variables; "none" or empty: no tracing, unless OTEL_EXPORTER_OTLP_ENDPOINT is set`,
		func(o *Options) *string { return &o.TracesExporter }},
}

// BindFlags defines the flags on fs, each defaulting from its environment
// variable, then from its built-in default.
//
// controller-runtime registers its own --kubeconfig on flag.CommandLine;
// when fs already has that flag, BindFlags makes it set both.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	for _, s := range settings {
		dst := s.dst(o)
		def := s.def
		if v, ok := os.LookupEnv(s.env); ok && v != "" {
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
		if secretFlags[s.flag] || LooksLikeKeyMaterial(def) {
			// An empty DefValue is the zero value: the usage prints no
			// default at all, so it does not even tell that one is set.
			fs.Lookup(s.flag).DefValue = ""
		}
	}
}

// LooksLikeKeyMaterial reports whether a setting that should hold a path
// holds PEM or other multi-line content instead (TEMPORAL_TLS_KEY set to
// the key itself, a common slip): such a value is never printed.
func LooksLikeKeyMaterial(v string) bool {
	return strings.Contains(v, "-----BEGIN") || strings.ContainsAny(v, "\n\r")
}

// String keeps secrets out of anything that prints Options with %v or %+v.
func (o Options) String() string {
	return fmt.Sprintf("{Kubeconfig:%s TemporalAddress:%s TemporalNamespace:%s TaskQueue:%s TLSCAFile:%s TLSCertFile:%s TLSKeyFile:%s TLSServerName:%s APIKey:%s MetricsBindAddress:%s HealthProbeBindAddress:%s TracesExporter:%s}",
		o.Kubeconfig, o.TemporalAddress, o.TemporalNamespace, o.TaskQueue, o.TLSCAFile, o.TLSCertFile,
		redactPath(o.TLSKeyFile), o.TLSServerName, redacted(o.APIKey), o.MetricsBindAddress, o.HealthProbeBindAddress, o.TracesExporter)
}

// LogValue keeps secrets out of slog lines that log Options.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// redacted says whether a secret is set, never what it is.
func redacted(v string) string {
	if v == "" {
		return ""
	}
	return "[redacted]"
}

// redactPath prints a path, unless it is key material itself.
func redactPath(v string) string {
	if LooksLikeKeyMaterial(v) {
		return redacted(v)
	}
	return v
}

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

// Validate checks the settings every process needs.
func (o *Options) Validate() error {
	var errs []error
	if o.TemporalAddress == "" {
		errs = append(errs, errors.New("--temporal-address (TEMPORAL_ADDRESS) must not be empty"))
	}
	if o.TemporalNamespace == "" {
		errs = append(errs, errors.New("--temporal-namespace (TEMPORAL_NAMESPACE) must not be empty"))
	}
	if o.TaskQueue == "" {
		errs = append(errs, errors.New("--task-queue (TEMPORAL_TASK_QUEUE) must not be empty"))
	}
	if LooksLikeKeyMaterial(o.TLSKeyFile) {
		errs = append(errs, errors.New("--temporal-tls-key (TEMPORAL_TLS_KEY) holds key material, not a path: mount the key as a file and give its path"))
	}
	if LooksLikeKeyMaterial(o.TLSCertFile) || LooksLikeKeyMaterial(o.TLSCAFile) {
		errs = append(errs, errors.New("--temporal-tls-cert and --temporal-tls-ca (TEMPORAL_TLS_CERT, TEMPORAL_TLS_CA) take paths, not PEM content"))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--temporal-tls-cert (TEMPORAL_TLS_CERT) and --temporal-tls-key (TEMPORAL_TLS_KEY) must be set together"))
	}
	if _, err := tracing.Exporter(o.TracesExporter, os.Getenv); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
