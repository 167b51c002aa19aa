package servers

import (
	"fmt"
	"os"
	"path/filepath"

	"ate.dev/orchestrator/internal/localstack/procs"
)

// ServiceAccountSigningKeyFile is the private key the API server signs
// service account tokens with (envtest generates it at start); the
// controller manager's token controller signs with it too.
func (k *Kube) ServiceAccountSigningKeyFile() string {
	return filepath.Join(k.cfg.Dir, "kube-apiserver-certs", "sa-signer.key")
}

// WriteClientFiles writes, into dir, the files the other components of a
// cluster connect with: an admin kubeconfig and the API server's serving
// CA. It returns their paths.
func (k *Kube) WriteClientFiles(dir string) (kubeconfig, rootCA string, err error) {
	kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, k.KubeConfig, 0o600); err != nil {
		return "", "", fmt.Errorf("kube: writing the admin kubeconfig: %w", err)
	}
	rootCA = filepath.Join(dir, "kube-apiserver-ca.crt")
	if err := os.WriteFile(rootCA, k.RestConfig.CAData, 0o644); err != nil {
		return "", "", fmt.Errorf("kube: writing the API server's CA: %w", err)
	}
	return kubeconfig, rootCA, nil
}

// Pids are the process IDs of etcd and kube-apiserver, by name.
func (k *Kube) Pids() (map[string]int, error) {
	pids := map[string]int{}
	for _, name := range []string{etcdName, apiServerName} {
		pid, err := procs.ReadPID(k.launcherDir, name)
		if err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
		pids[name] = pid
	}
	return pids, nil
}
