package servers

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// NewKwok writes kwok's configuration into dir and picks a free port for
// its health endpoint; Start starts it. Kwok plays the kubelet of every node
// annotated KwokManagedAnnotation=KwokManagedValue (heartbeats, the node
// lease, the Ready condition) and of the pods bound to those nodes (Running
// and Ready at once, deleted at once when their deletion is asked). No
// container runs. Once it stops, its nodes miss their heartbeats: the
// controller manager marks them Unknown after its grace period.
func NewKwok(binary, dir, kubeconfig, logFile string) (*Component, error) {
	config := filepath.Join(dir, "kwok.yaml")
	if err := writeKwokConfig(config); err != nil {
		return nil, err
	}
	c, addr, err := newComponent("kwok", binary, logFile)
	if err != nil {
		return nil, err
	}
	c.healthURL = "http://" + addr + "/healthz"
	c.args = []string{
		"--config=" + config,
		"--kubeconfig=" + kubeconfig,
		// Only the simulated fleet: a real node registered to the same
		// API server (none is, locally) would keep its kubelet.
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokManagedAnnotation + "=" + KwokManagedValue,
		// Renewed every quarter of it, as a kubelet does: short, so that
		// the controller manager's grace period can be.
		"--node-lease-duration-seconds=20",
		"--cidr=10.244.0.0/16",
		"--node-ip=" + loopback,
		"--server-address=" + addr,
	}
	return c, nil
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
