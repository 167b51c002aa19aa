package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
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

var changelogHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`)

// CHANGELOG.md keeps the Keep a Changelog shape (an Unreleased section
// first, then each version with its date), and the kustomization deploys
// either a development build or a version it lists.
func TestChangelogAndImageTag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "CHANGELOG.md"))
	require.NoError(t, err)
	headings := changelogHeading.FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, headings, "CHANGELOG.md has no ## [version] heading")
	require.Equal(t, "Unreleased", headings[0][1], "the first section of CHANGELOG.md")
	released := []string{}
	for _, h := range headings[1:] {
		require.Regexp(t, `^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`, h[1], "CHANGELOG.md heading %q", h[0])
		require.Regexp(t, `^ - \d{4}-\d{2}-\d{2}$`, h[2], "CHANGELOG.md heading %q: want ## [X.Y.Z] - YYYY-MM-DD", h[0])
		released = append(released, "v"+h[1])
	}
	require.Contains(t, string(b), "### Added", "CHANGELOG.md has no change-type subsection")

	var k struct {
		Images []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
		} `yaml:"images"`
	}
	kb, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(kb, &k))
	require.Len(t, k.Images, 1, "deploy/kustomization.yaml images")
	require.Equal(t, "ate-orchestrator", k.Images[0].Name, "deploy/kustomization.yaml's image")
	require.NotEmpty(t, k.Images[0].NewTag, "deploy/kustomization.yaml's image has no newTag")
	if tag := k.Images[0].NewTag; tag != "dev" {
		require.Contains(t, released, tag, "deploy/kustomization.yaml deploys %s, a version CHANGELOG.md does not list", tag)
	}
}
