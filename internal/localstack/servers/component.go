package servers

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Component is one program of the local cluster beside the API server
// (kube-controller-manager, kube-scheduler, kwok): a binary started with
// fixed arguments, healthy once an HTTP(S) health endpoint answers 200.
type Component struct {
	process
	binary string
	args   []string
	// healthURL answers 200 once the process serves; https is not verified
	// (the components serve self-signed certificates on loopback).
	healthURL string
}

// Start launches the process, unless it runs, and waits until it is healthy;
// on failure it kills the process and says why, with the log's last lines.
func (c *Component) Start(ctx context.Context) error {
	if c.Running() {
		return nil
	}
	if err := c.launch(exec.Command(c.binary, c.args...)); err != nil {
		return err
	}
	return c.waitReady(ctx, 60*time.Second, 100*time.Millisecond, c.probe)
}

// healthClient trusts any certificate: it only asks loopback servers this
// process started whether they are up.
var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe of a child
}

func (c *Component) probe(ctx context.Context) error { return probeHealth(ctx, c.healthURL) }

// probeHealth asks a health endpoint of a server this process started
// whether it is up: 200 OK, else an error with the status and the start of
// the body.
func probeHealth(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// newComponent is a component whose health endpoint is to be served on
// addr, a free port of loopback.
func newComponent(name, binary, logFile string) (_ *Component, addr string, err error) {
	if addr, err = FreeAddr(loopback); err != nil {
		return nil, "", err
	}
	return &Component{process: process{name: name, logFile: logFile, stopTimeout: 10 * time.Second}, binary: binary}, addr, nil
}

// newKubeComponent is newComponent for a Kubernetes component (the
// controller manager, the scheduler): it makes the directory for the
// serving certificate it generates under dir, and serves its health
// endpoint on loopback, without leader election or profiling.
func newKubeComponent(name, binary, dir, kubeconfig, logFile string, args ...string) (*Component, error) {
	c, addr, err := newComponent(name, binary, logFile)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, name+"-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: creating %s: %w", name, certDir, err)
	}
	_, port, _ := net.SplitHostPort(addr)
	c.healthURL = "https://" + addr + "/healthz"
	c.args = append(args,
		"--kubeconfig="+kubeconfig,
		// One instance: no lease to take, no wait for it at start.
		"--leader-elect=false",
		"--bind-address="+loopback,
		"--secure-port="+port,
		"--cert-dir="+certDir,
		"--profiling=false",
	)
	return c, nil
}

// NewScheduler is a kube-scheduler with the default profile, which honours
// taints and tolerations, node selectors and affinity, and extended
// resources such as ate.dev/kvm as a real cluster's does. Its serving
// certificate goes under dir; kubeconfig authenticates it as an admin.
func NewScheduler(binary, dir, kubeconfig, logFile string) (*Component, error) {
	return newKubeComponent("kube-scheduler", binary, dir, kubeconfig, logFile)
}
