package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/internal/promquery"
)

// PrometheusBinary is the prometheus program the tests and the local
// stack run: in $KUBEBUILDER_ASSETS when set (make test points it at bin/,
// which holds every tool), else in the repository's bin/.
func PrometheusBinary() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return FindBinary("prometheus", filepath.Join(d, "prometheus"), "from $KUBEBUILDER_ASSETS")
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return FindBinary("prometheus", filepath.Join(root, "bin", "prometheus"), "from the repository's bin/")
}

// PrometheusConfig configures a Prometheus server (hack/tools/prometheus).
type PrometheusConfig struct {
	// Binary is the prometheus program.
	Binary string
	// Port is the HTTP port on 127.0.0.1 (the API and /metrics); 0 picks a
	// free one.
	Port int
	// Dir holds the generated configuration (prometheus.yml), the
	// targets' files (targets/), the API server's credentials and, in
	// data/, the TSDB. It is created if missing; a TSDB left there by an
	// earlier run is kept, the earlier run's targets are not.
	Dir string
	// ScrapeInterval is how often every target is scraped, but the API
	// server; default DefaultPrometheusScrapeInterval.
	ScrapeInterval time.Duration
	// APIServer, when set, is scraped as the job "kube-apiserver" with the
	// credentials it carries (a client certificate or a bearer token, and
	// the CA of its serving certificate), every APIServerScrapeInterval
	// (default DefaultAPIServerScrapeInterval, never below ScrapeInterval).
	APIServer               *rest.Config
	APIServerScrapeInterval time.Duration
	// LogFile receives the server's output (appended); empty discards it.
	LogFile string
}

const (
	// DefaultPrometheusScrapeInterval: a second, so that a test sees a
	// value it served within a few seconds.
	DefaultPrometheusScrapeInterval = time.Second
	// DefaultAPIServerScrapeInterval: the API server's /metrics is megabytes of
	// histograms; at every second it would take a noticeable share of a
	// 2-core machine, for series nothing here needs at that pace.
	DefaultAPIServerScrapeInterval = 15 * time.Second
)

// Prometheus is a Prometheus server process. Its scrape targets, but
// itself (job "prometheus") and the API server, are files in its targets
// directory (file_sd_configs), which it watches: AddTarget and
// RemoveTarget change them while it runs.
type Prometheus struct {
	process
	cfg    PrometheusConfig
	client *promquery.Client
}

// NewPrometheus validates cfg, picks the port, and writes the
// configuration and the API server's credentials into cfg.Dir; Launch
// starts the server.
func NewPrometheus(cfg PrometheusConfig) (_ *Prometheus, err error) {
	if cfg.Binary == "" {
		return nil, errors.New("prometheus: no binary configured")
	}
	if cfg.Dir == "" {
		return nil, errors.New("prometheus: no directory configured")
	}
	if cfg.ScrapeInterval == 0 {
		cfg.ScrapeInterval = DefaultPrometheusScrapeInterval
	}
	if cfg.APIServerScrapeInterval == 0 {
		cfg.APIServerScrapeInterval = DefaultAPIServerScrapeInterval
	}
	cfg.APIServerScrapeInterval = max(cfg.APIServerScrapeInterval, cfg.ScrapeInterval)
	if cfg.Port, err = pickPort("Prometheus", cfg.Port); err != nil {
		return nil, err
	}
	p := &Prometheus{process: process{name: "prometheus", logFile: cfg.LogFile, stopTimeout: 10 * time.Second}, cfg: cfg}
	// A stack's targets are its own: files an earlier run left (its
	// programs' ports, long gone) would only show as down.
	if err := os.RemoveAll(p.TargetsDir()); err != nil {
		return nil, fmt.Errorf("prometheus: clearing the old targets in %s: %w", p.TargetsDir(), err)
	}
	for _, d := range []string{p.TargetsDir(), filepath.Join(cfg.Dir, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("prometheus: creating %s: %w", d, err)
		}
	}
	if err := p.writeConfig(); err != nil {
		return nil, err
	}
	if p.client, err = promquery.New(promquery.Config{URL: p.URL()}); err != nil {
		return nil, fmt.Errorf("prometheus: a client of %s: %w", p.URL(), err)
	}
	return p, nil
}

// Address is the server's host:port.
func (p *Prometheus) Address() string {
	return net.JoinHostPort(loopback, strconv.Itoa(p.cfg.Port))
}

// URL is the server's base URL, what the worker's --prometheus-url takes.
func (p *Prometheus) URL() string { return "http://" + p.Address() }

// Client queries the server.
func (p *Prometheus) Client() *promquery.Client { return p.client }

// TargetsDir is the directory of the targets' files, which another
// process (a second local stack) may add its own to with
// WritePrometheusTarget.
func (p *Prometheus) TargetsDir() string { return filepath.Join(p.cfg.Dir, "targets") }

// Launch starts the server process without waiting for it; WaitReady
// waits. Launching a running server is a no-op.
func (p *Prometheus) Launch() error {
	if p.Running() {
		return nil
	}
	return p.launch(exec.Command(p.cfg.Binary,
		"--config.file="+filepath.Join(p.cfg.Dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.cfg.Dir, "data"),
		// A day is plenty for a local stack, and keeps .state small.
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address="+p.Address(),
		"--log.level=warn",
	))
}

// WaitReady waits until the launched server answers /-/ready (its TSDB
// opened, its configuration loaded); on failure it kills the server.
func (p *Prometheus) WaitReady(ctx context.Context) error {
	return p.waitReady(ctx, 60*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		return probeHealth(ctx, p.URL()+"/-/ready")
	})
}

// Start is Launch, then WaitReady.
func (p *Prometheus) Start(ctx context.Context) error {
	if err := p.Launch(); err != nil {
		return err
	}
	return p.WaitReady(ctx)
}

// AddTarget has the server scrape http://hostport/metrics as job, with
// labels on every series it scrapes there (a label "__metrics_path__"
// scrapes another path). The server reads the file within moments of its
// writing; its first scrape follows within a scrape interval. Adding a
// target again replaces its labels.
func (p *Prometheus) AddTarget(job, hostport string, labels map[string]string) error {
	return WritePrometheusTarget(p.TargetsDir(), job, hostport, labels)
}

// RemoveTarget stops the scrapes of job's target hostport; its series
// stay in the TSDB.
func (p *Prometheus) RemoveTarget(job, hostport string) error {
	return RemovePrometheusTarget(p.TargetsDir(), job, hostport)
}

// WritePrometheusTarget writes the file of one target into a Prometheus'
// targets directory (see AddTarget), for a process that shares a server
// it did not start.
func WritePrometheusTarget(dir, job, hostport string, labels map[string]string) error {
	if job == "" {
		return errors.New("prometheus: a target needs a job")
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return fmt.Errorf("prometheus: target %q of job %s is not a host:port: %w", hostport, job, err)
	}
	all := map[string]string{"job": job}
	maps.Copy(all, labels)
	b, err := json.Marshal([]fileTarget{{Targets: []string{hostport}, Labels: all}})
	if err != nil {
		return fmt.Errorf("prometheus: target %s of job %s: %w", hostport, job, err)
	}
	// Written aside, then renamed: the server watches the directory and
	// must never read a half-written file (its glob skips the .tmp).
	path := targetFile(dir, job, hostport)
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("prometheus: writing target %s of job %s: %w", hostport, job, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("prometheus: writing target %s of job %s: %w", hostport, job, err)
	}
	return nil
}

// RemovePrometheusTarget removes the file WritePrometheusTarget wrote; a
// target that has none is already gone.
func RemovePrometheusTarget(dir, job, hostport string) error {
	if err := os.Remove(targetFile(dir, job, hostport)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("prometheus: removing target %s of job %s: %w", hostport, job, err)
	}
	return nil
}

// fileTarget is one entry of a file_sd file.
type fileTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

var unsafeInFileName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func targetFile(dir, job, hostport string) string {
	return filepath.Join(dir, unsafeInFileName.ReplaceAllString(job+"_"+hostport, "_")+".json")
}

// WaitForQuery runs query every 250 ms until ok accepts its samples (nil
// ok: until there is at least one), and returns them; after timeout it
// fails with the last answer or error. A value only appears once a scrape
// has stored it, so this is how a test waits for a target's value.
func (p *Prometheus) WaitForQuery(ctx context.Context, query string, timeout time.Duration, ok func([]promquery.Sample) bool) ([]promquery.Sample, error) {
	if ok == nil {
		ok = func(s []promquery.Sample) bool { return len(s) > 0 }
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		samples, err := p.client.Query(ctx, query, time.Time{})
		switch {
		case err == nil && ok(samples):
			return samples, nil
		case err == nil:
			last = fmt.Sprintf("the last answer was %v", samples)
		default:
			last = "the last query failed: " + err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("prometheus %s: %q did not answer as wanted within %s: %s", p.URL(), query, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// The configuration, as Prometheus reads it (YAML; written from these
// structs so that every value is quoted as it must be).
type (
	promConfig struct {
		Global        promGlobal         `json:"global"`
		ScrapeConfigs []promScrapeConfig `json:"scrape_configs"`
	}
	promGlobal struct {
		ScrapeInterval string `json:"scrape_interval"`
		ScrapeTimeout  string `json:"scrape_timeout"`
	}
	promScrapeConfig struct {
		JobName        string             `json:"job_name"`
		HonorLabels    bool               `json:"honor_labels,omitempty"`
		ScrapeInterval string             `json:"scrape_interval,omitempty"`
		ScrapeTimeout  string             `json:"scrape_timeout,omitempty"`
		Scheme         string             `json:"scheme,omitempty"`
		TLSConfig      *promTLSConfig     `json:"tls_config,omitempty"`
		Authorization  *promAuthorization `json:"authorization,omitempty"`
		StaticConfigs  []promStaticConfig `json:"static_configs,omitempty"`
		FileSDConfigs  []promFileSDConfig `json:"file_sd_configs,omitempty"`
	}
	promTLSConfig struct {
		CAFile   string `json:"ca_file,omitempty"`
		CertFile string `json:"cert_file,omitempty"`
		KeyFile  string `json:"key_file,omitempty"`
	}
	promAuthorization struct {
		CredentialsFile string `json:"credentials_file"`
	}
	promStaticConfig struct {
		Targets []string `json:"targets"`
	}
	promFileSDConfig struct {
		Files           []string `json:"files"`
		RefreshInterval string   `json:"refresh_interval"`
	}
)

// promDuration is d as Prometheus' configuration writes durations (1500ms,
// not Go's 1.5s).
func promDuration(d time.Duration) string { return model.Duration(d).String() }

func (p *Prometheus) writeConfig() error {
	interval := p.cfg.ScrapeInterval
	cfg := promConfig{
		// A scrape may take the whole interval: on a loaded 2-core
		// machine a second is not always enough for a process to answer.
		Global: promGlobal{ScrapeInterval: promDuration(interval), ScrapeTimeout: promDuration(interval)},
		ScrapeConfigs: []promScrapeConfig{
			{JobName: "prometheus", StaticConfigs: []promStaticConfig{{Targets: []string{p.Address()}}}},
			{
				// The job name is the default of targets whose file sets
				// none; WritePrometheusTarget always sets "job".
				JobName: "targets",
				// A series keeps the labels its target served, rather
				// than have a target label rename them (exported_job, ...):
				// a test reads back what it served.
				HonorLabels: true,
				FileSDConfigs: []promFileSDConfig{{
					Files: []string{filepath.Join(p.TargetsDir(), "*.json")},
					// The directory is watched (inotify); the refresh is
					// only the fallback.
					RefreshInterval: "5s",
				}},
			},
		},
	}
	if p.cfg.APIServer != nil {
		job, err := p.apiServerJob()
		if err != nil {
			return err
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, job)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("prometheus: encoding the configuration: %w", err)
	}
	path := filepath.Join(p.cfg.Dir, "prometheus.yml")
	if err := os.WriteFile(path, append([]byte("# Written by internal/localstack/servers (prometheus.go) at each start.\n"), b...), 0o644); err != nil {
		return fmt.Errorf("prometheus: writing %s: %w", path, err)
	}
	return nil
}

// apiServerJob scrapes the API server over HTTPS with the rest config's
// own credentials, written as files into Dir (Prometheus reads
// credentials only from files or its configuration): the local stack's
// admin client certificate (envtest's, in system:masters, which may get
// /metrics), or a bearer token if that is what it has.
func (p *Prometheus) apiServerJob() (promScrapeConfig, error) {
	rc := p.cfg.APIServer
	u, err := url.Parse(rc.Host)
	if err != nil || u.Host == "" {
		return promScrapeConfig{}, fmt.Errorf("prometheus: the API server's address %q is not a URL", rc.Host)
	}
	dir := filepath.Join(p.cfg.Dir, "kube-apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return promScrapeConfig{}, fmt.Errorf("prometheus: creating %s: %w", dir, err)
	}
	write := func(name string, data []byte) (string, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return "", fmt.Errorf("prometheus: writing the API server's %s: %w", name, err)
		}
		return path, nil
	}
	job := promScrapeConfig{
		JobName: "kube-apiserver", Scheme: u.Scheme,
		ScrapeInterval: promDuration(p.cfg.APIServerScrapeInterval),
		ScrapeTimeout:  promDuration(p.cfg.APIServerScrapeInterval),
		StaticConfigs:  []promStaticConfig{{Targets: []string{u.Host}}},
		TLSConfig:      &promTLSConfig{},
	}
	tc := rc.TLSClientConfig
	if len(tc.CAData) > 0 {
		if job.TLSConfig.CAFile, err = write("ca.crt", tc.CAData); err != nil {
			return promScrapeConfig{}, err
		}
	}
	switch {
	case len(tc.CertData) > 0 && len(tc.KeyData) > 0:
		if job.TLSConfig.CertFile, err = write("client.crt", tc.CertData); err != nil {
			return promScrapeConfig{}, err
		}
		if job.TLSConfig.KeyFile, err = write("client.key", tc.KeyData); err != nil {
			return promScrapeConfig{}, err
		}
	case rc.BearerToken != "":
		token, err := write("token", []byte(rc.BearerToken))
		if err != nil {
			return promScrapeConfig{}, err
		}
		job.Authorization = &promAuthorization{CredentialsFile: token}
	default:
		return promScrapeConfig{}, errors.New("prometheus: the API server's rest config has neither a client certificate nor a bearer token to scrape it with")
	}
	return job, nil
}
