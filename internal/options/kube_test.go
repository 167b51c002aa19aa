package options

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://%s:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func writeKubeconfig(t *testing.T, dir, name, host string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(kubeconfigYAML, host)), 0o600))
	return path
}

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	a := writeKubeconfig(t, dir, "a", "a.example")
	b := writeKubeconfig(t, dir, "b", "b.example")

	cfg, err := (&Options{Kubeconfig: a}).RestConfig()
	require.NoError(t, err)
	require.Equal(t, "https://a.example:6443", cfg.Host)
	require.Equal(t, float32(-1), cfg.QPS, "client-side rate limiting is off")

	// A KUBECONFIG-style list merges; the first file wins.
	cfg, err = (&Options{Kubeconfig: b + string(os.PathListSeparator) + a}).RestConfig()
	require.NoError(t, err)
	require.Equal(t, "https://b.example:6443", cfg.Host)

	_, err = (&Options{Kubeconfig: filepath.Join(dir, "missing")}).RestConfig()
	require.ErrorContains(t, err, "loading kubeconfig "+filepath.Join(dir, "missing"))
}
