package servers

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// kwokStages are the stages kwok plays on the nodes and pods it manages; see
// kwokstages/README.md.
//
//go:embed kwokstages/*.yaml
var kwokStages embed.FS

// KwokManagedAnnotation marks a node kwok manages; kwok ignores every other.
const (
	KwokManagedAnnotation = "kwok.x-k8s.io/node"
	KwokManagedValue      = "fake"
)

// NotReadyLabel, set to "true" on a managed node, makes kwok report the
// node Ready=False (its lease is still renewed, as a kubelet whose runtime
// broke would); removing it makes the node Ready again.
const NotReadyLabel = "localcluster.ate.dev/not-ready"

// KwokConfig configures kwok.
type KwokConfig struct {
	// Binary is kwok.
	Binary string
	// Dir holds kwok's configuration (its stages); it must exist.
	Dir string
	// KubeconfigFile authenticates to the API server as an admin.
	KubeconfigFile string
	// NodeLeaseDuration is the duration of the leases kwok renews for its
	// nodes, every quarter of it (as a kubelet does); default 20s, so that
	// the controller manager's grace period can be short.
	NodeLeaseDuration time.Duration
	// PodCIDR is where kwok takes the pods' IPs from; default 10.244.0.0/16.
	PodCIDR string
	// LogFile receives the output (appended); empty discards it.
	LogFile string
	// StartTimeout bounds the start; default 30s.
	StartTimeout time.Duration
}

// Kwok is a kwok process: it plays the kubelet of every node annotated
// KwokManagedAnnotation=KwokManagedValue (heartbeats, the node lease, the
// Ready condition) and of the pods bound to those nodes (Running and Ready
// at once, deleted at once when their deletion is asked). No container runs.
// Once it stops, its nodes miss their heartbeats: the controller manager
// marks them Unknown after its grace period.
type Kwok struct{ component }

// NewKwok validates cfg, writes kwok's configuration and picks a free port
// for its health endpoint; Start starts the process.
func NewKwok(cfg KwokConfig) (*Kwok, error) {
	for what, v := range map[string]string{"binary": cfg.Binary, "directory": cfg.Dir, "kubeconfig": cfg.KubeconfigFile} {
		if v == "" {
			return nil, fmt.Errorf("kwok: no %s configured", what)
		}
	}
	if cfg.NodeLeaseDuration == 0 {
		cfg.NodeLeaseDuration = 20 * time.Second
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = "10.244.0.0/16"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	config := filepath.Join(cfg.Dir, "kwok.yaml")
	if err := writeKwokConfig(config); err != nil {
		return nil, err
	}
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return &Kwok{component{
		name:   "kwok",
		binary: cfg.Binary,
		args: []string{
			"--config=" + config,
			"--kubeconfig=" + cfg.KubeconfigFile,
			// Only the simulated fleet: a real node registered to the same
			// API server (none is, locally) would keep its kubelet.
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + KwokManagedAnnotation + "=" + KwokManagedValue,
			"--node-lease-duration-seconds=" + strconv.Itoa(int(cfg.NodeLeaseDuration.Seconds())),
			"--cidr=" + cfg.PodCIDR,
			"--node-ip=127.0.0.1",
			"--server-address=" + addr,
		},
		logFile:      cfg.LogFile,
		healthURL:    "http://" + addr + "/healthz",
		startTimeout: cfg.StartTimeout,
	}}, nil
}

// writeKwokConfig writes the embedded stages as one multi-document YAML file.
func writeKwokConfig(path string) error {
	files, err := fs.Glob(kwokStages, "kwokstages/*.yaml")
	if err != nil {
		return fmt.Errorf("kwok: listing stages: %w", err)
	}
	var b bytes.Buffer
	for _, f := range files {
		doc, err := kwokStages.ReadFile(f)
		if err != nil {
			return fmt.Errorf("kwok: reading stage %s: %w", f, err)
		}
		fmt.Fprintf(&b, "---\n# %s\n", filepath.Base(f))
		b.Write(bytes.TrimRight(doc, "\n"))
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("kwok: writing configuration: %w", err)
	}
	return nil
}
