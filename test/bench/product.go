package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ate.dev/orchestrator/internal/localstack/procs"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// buildProduct builds the product's worker and starter from ./cmd/worker
// and ./cmd/starter into dir.
func buildProduct(ctx context.Context, root, dir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range []string{"worker", "starter"} {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, b)
		}
		bins[name] = out
	}
	return bins, nil
}

// process is the worker or the starter, run as the product runs: its own
// binary, configured by environment, metrics and probes on local ports.
type process struct {
	name        string
	proc        *procs.Process
	metricsAddr string
	healthAddr  string
	log         *os.File
}

func startProcess(name, bin, logDir string, env []string) (*process, error) {
	p := &process{name: name}
	var err error
	if p.metricsAddr, err = servers.FreeAddr("127.0.0.1"); err != nil {
		return nil, err
	}
	if p.healthAddr, err = servers.FreeAddr("127.0.0.1"); err != nil {
		return nil, err
	}
	if p.log, err = os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	// Metrics in plain HTTP on loopback.
	cmd.Env = append(cmd.Env, "METRICS_BIND_ADDRESS="+p.metricsAddr, "METRICS_SECURE=false", "HEALTH_PROBE_BIND_ADDRESS="+p.healthAddr)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if p.proc, err = procs.Start(name, cmd); err != nil {
		_ = p.log.Close()
		return nil, err
	}
	return p, nil
}

// waitReady polls the process's /readyz until it answers 200.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.proc.Exited() {
			return fmt.Errorf("%s exited: %w (log %s)", p.name, p.proc.Err(), p.log.Name())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.healthAddr+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within %s (log %s)", p.name, timeout, p.log.Name())
}

func (p *process) pid() int { return p.proc.Pid() }

func (p *process) stop() error {
	if p == nil || p.proc == nil {
		return nil
	}
	err := p.proc.Stop(15 * time.Second)
	_ = p.log.Close()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // stopped by our SIGTERM
	}
	return err
}

// processMetrics scrapes a process's Prometheus endpoint and sums each
// series the bench reads (scrapedPrefixes) by name and the listed labels.
func processMetrics(ctx context.Context, addr string, keep ...string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	// Uncompressed: Go's client asks for gzip by default, and serving the
	// bench's scrapes during a wave was 7% of the worker's CPU profile
	// (docs/decisions/0015-switch-overhead.md), about half of it gzip: the
	// bench's cost, counted as the product's.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	fams, err := parseMetrics(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !slices.ContainsFunc(scrapedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, k := range keep {
				if v := label(m, k); v != "" {
					key += "|" + k + "=" + v
				}
			}
			switch {
			case m.Histogram != nil: // as their _count and _sum series
				out[name+"_count"+key] += float64(m.Histogram.GetSampleCount())
				out[name+"_sum"+key] += m.Histogram.GetSampleSum()
			case m.Summary != nil:
				out[name+"_count"+key] += float64(m.Summary.GetSampleCount())
				out[name+"_sum"+key] += m.Summary.GetSampleSum()
			default: // at most one of them is set
				out[name+key] += m.GetUntyped().GetValue() + m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func diffMetrics(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// scrapedPrefixes are the metrics the bench reads from the worker and the
// starter: Temporal's SDK metrics, the product's own, client-go's request
// counts, and controller-runtime's reconcile and work queue metrics.
var scrapedPrefixes = []string{"temporal_", "ate_", "rest_client_requests_total",
	"controller_runtime_reconcile_total", "controller_runtime_active_workers", "workqueue_depth", "workqueue_adds_total"}
