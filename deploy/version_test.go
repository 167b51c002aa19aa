package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// `make set-image` points the kustomization at the image of a version, and
// both Deployments then run it. Run on a copy of deploy/, so the test does
// not touch the repository.
func TestSetImageFromVersion(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(".")))
	cmd := exec.Command("make", "-s", "set-image", "VERSION=v9.8.7-1-gabcdef0", "IMAGE=registry.example/ate",
		"KUSTOMIZATION="+filepath.Join(dir, "kustomization.yaml"))
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make set-image: %s", out)

	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build of the edited copy")
	var images []string
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &d), "Deployment %s", r.GetName())
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	require.Equal(t, []string{"registry.example/ate:v9.8.7-1-gabcdef0", "registry.example/ate:v9.8.7-1-gabcdef0"}, images)
}
