package release

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"
)

func TestGoPURL(t *testing.T) {
	tests := []struct {
		path, version, want string
	}{
		{"go.temporal.io/sdk", "v1.51.0", "pkg:golang/go.temporal.io/sdk@v1.51.0"},
		// Case is kept: module paths are case-sensitive.
		{"github.com/BurntSushi/toml", "v1.4.1-0.20240526193622-a339e1f7089c", "pkg:golang/github.com/BurntSushi/toml@v1.4.1-0.20240526193622-a339e1f7089c"},
		{"github.com/docker/docker", "v28.0.0+incompatible", "pkg:golang/github.com/docker/docker@v28.0.0%2Bincompatible"},
		{"std", "go1.26.8", "pkg:golang/std@go1.26.8"},
		{"example.com/m", "", "pkg:golang/example.com/m"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, GoPURL(tt.path, tt.version))
		})
	}
}

func TestSumSHA256(t *testing.T) {
	tests := []struct {
		name, sum, want string
		wantErr         bool
	}{
		// go.sum's line of github.com/google/uuid v1.6.0.
		{name: "h1", sum: "h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=", want: "348bda24330eb231c0f27d630212d2833ac0cf2d4782bfa136b6f9edefbde05d"},
		{name: "not h1", sum: "h2:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=", wantErr: true},
		{name: "not base64", sum: "h1:!!", wantErr: true},
		{name: "short", sum: "h1:AAAA", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SumSHA256(tt.sum)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestValidTagAndRepository(t *testing.T) {
	tags := []struct {
		tag string
		ok  bool
	}{
		{"v0.1.0", true},
		{"v0.1.0-3-g848c611-dirty", true},
		{"848c611", true},
		{"", false},
		{"-v1", false},
		{"v1/2", false},
		{strings.Repeat("a", 129), false},
	}
	for _, tt := range tags {
		require.Equal(t, tt.ok, ValidTag(tt.tag) == nil, "tag %q", tt.tag)
	}
	repos := []struct {
		repo string
		ok   bool
	}{
		{"ghcr.io/ate-dev/ate-orchestrator", true},
		{"localhost:5000/ate-orchestrator", true},
		// A release names its registry: a cluster pulls what install.yaml names.
		{"ate-orchestrator", false},
		{"", false},
		{"ghcr.io/ate-dev/ate-orchestrator:v1", false},
		{"ghcr.io/ate-dev/ate-orchestrator@sha256:" + strings.Repeat("0", 64), false},
		{"Upper/Case", false},
	}
	for _, tt := range repos {
		require.Equal(t, tt.ok, ValidRepository(tt.repo) == nil, "repository %q", tt.repo)
	}
}

func TestSourceDate(t *testing.T) {
	commit := time.Date(2026, 12, 1, 9, 59, 59, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name, env string
		want      time.Time
		wantErr   bool
	}{
		{name: "commit time", env: "", want: commit.UTC()},
		{name: "SOURCE_DATE_EPOCH", env: "1700000000", want: time.Unix(1700000000, 0).UTC()},
		{name: "not a number", env: "yesterday", wantErr: true},
		{name: "negative", env: "-1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SourceDate(tt.env, commit)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, time.UTC, got.Location())
		})
	}
}

func TestGitRevision(t *testing.T) {
	require.Equal(t, "abc", Git{Commit: "abc"}.Revision())
	require.Equal(t, "abc-dirty", Git{Commit: "abc", Dirty: true}.Revision())
}

func TestLDFlagsAndBuildArgs(t *testing.T) {
	require.Equal(t, "-s -w -X ate.dev/orchestrator/internal/version.Version=v0.1.0", LDFlags("v0.1.0"))
	args := BuildArgs("v0.1.0", "/out")
	require.Equal(t, []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -X ate.dev/orchestrator/internal/version.Version=v0.1.0", "-o", "/out/",
		"./cmd/worker", "./cmd/starter", "./cmd/teardown"}, args)
	require.Contains(t, BuildEnv(Platform{"linux", "arm64"}), "CGO_ENABLED=0")
	require.Contains(t, BuildEnv(Platform{"linux", "arm64"}), "GOWORK=off", "the product ships built as its own module")
	require.Contains(t, BuildEnv(Platform{"linux", "arm64"}), "GOARCH=arm64")
}

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("b\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tar"), []byte("a"), 0o644))
	require.NoError(t, WriteChecksums(dir, []string{"b.yaml", "a.tar"}))
	b, err := os.ReadFile(filepath.Join(dir, ChecksumsName))
	require.NoError(t, err)
	// sha256sum's format, sorted: `printf a | sha256sum`, `echo b | sha256sum`.
	require.Equal(t, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.tar\n"+
		"0263829989b6fd954f72baaf2fc64bc2e2f01d692d4de72986ea808f6e99813f  b.yaml\n", string(b))
	require.NoError(t, VerifyChecksums(dir))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tar"), []byte("A"), 0o644))
	require.ErrorContains(t, VerifyChecksums(dir), "a.tar")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tar"), []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stray"), nil, 0o644))
	require.ErrorContains(t, VerifyChecksums(dir), "does not list stray")

	require.Error(t, WriteChecksums(dir, []string{"../x"}))
	bad := []string{
		"abc  x\n",
		strings.Repeat("g", 64) + "  x\n",
		strings.Repeat("a", 64) + "  x\n" + strings.Repeat("b", 64) + "  x\n",
	}
	for _, s := range bad {
		_, err := ParseChecksums([]byte(s))
		require.Error(t, err, s)
	}
	sums, err := ParseChecksums([]byte(strings.Repeat("a", 64) + " *bin\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"bin": strings.Repeat("a", 64)}, sums)
}

func TestContainerImages(t *testing.T) {
	stream := `apiVersion: apps/v1
kind: Deployment
metadata: {name: w, namespace: ns}
spec:
  template:
    spec:
      initContainers: [{name: init, image: a@sha256:1}]
      containers: [{name: main, image: b:1}, {name: side, image: c}]
---
# a comment only
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: j, namespace: ns}
spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: t, image: d}]}}}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {containers: "not a list"}
`
	got, err := ContainerImages([]byte(stream))
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"Deployment ns/w init": "a@sha256:1",
		"Deployment ns/w main": "b:1",
		"Deployment ns/w side": "c",
		"CronJob ns/j t":       "d",
	}, got)
}

func TestCABundle(t *testing.T) {
	b := CABundle()
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		_, err := x509.ParseCertificate(blk.Bytes)
		require.NoError(t, err)
		n++
	}
	require.Empty(t, bytes.TrimSpace(b))
	// NSS has about 150 roots.
	require.Greater(t, n, 100)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// tarEntries lists a tar stream: name → header.
func tarEntries(t *testing.T, r io.Reader) map[string]*tar.Header {
	t.Helper()
	tr := tar.NewReader(r)
	hs := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		require.NoError(t, err)
		hs[h.Name] = h
	}
}

// fakeBinaries writes small files in place of the programs.
func fakeBinaries(t *testing.T) string {
	dir := t.TempDir()
	for _, p := range Programs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("#!fake "+p), 0o755))
	}
	return dir
}

func TestPlatformImage(t *testing.T) {
	created := time.Unix(1764583199, 0).UTC()
	m := Metadata{Version: "v0.1.0", Revision: "abc", Source: "https://example.com/ate", Created: created}
	build := func() v1.ImageIndex {
		work := t.TempDir()
		base, err := BaseLayer(work, created)
		require.NoError(t, err)
		var imgs []v1.Image
		for _, p := range Platforms {
			bins, err := BinariesLayer(fakeBinaries(t), t.TempDir(), created)
			require.NoError(t, err)
			img, err := PlatformImage(p, base, bins, m)
			require.NoError(t, err)
			imgs = append(imgs, img)
		}
		idx, err := Index(imgs, Platforms, m)
		require.NoError(t, err)
		return idx
	}
	idx := build()
	d1, err := idx.Digest()
	require.NoError(t, err)
	d2, err := build().Digest()
	require.NoError(t, err)
	require.Equal(t, d1, d2, "two assemblies of the same files differ")

	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 2)
	require.Equal(t, "v0.1.0", im.Annotations[AnnotationVersion])
	for i, desc := range im.Manifests {
		require.Equal(t, Platforms[i].Arch, desc.Platform.Architecture)
		img, err := idx.Image(desc.Digest)
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, "65532:65532", cf.Config.User)
		require.Equal(t, []string{"/usr/local/bin/worker"}, cf.Config.Cmd)
		require.Empty(t, cf.Config.Entrypoint)
		require.Equal(t, created, cf.Created.Time)
		require.Equal(t, "abc", cf.Config.Labels[AnnotationRevision])
		require.Equal(t, "Apache-2.0", cf.Config.Labels[AnnotationLicenses])
		layers, err := img.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 2)
		rc, err := layers[0].Uncompressed()
		require.NoError(t, err)
		base := tarEntries(t, rc)
		rc.Close()
		require.Contains(t, base, "etc/passwd")
		require.Contains(t, base, "etc/ssl/certs/ca-certificates.crt")
		require.Equal(t, int64(0o1777), base["tmp/"].Mode)
		require.Equal(t, NonrootUID, base["home/nonroot/"].Uid)
		for _, h := range base {
			require.True(t, created.Equal(h.ModTime), h.Name)
		}
		rc, err = layers[1].Uncompressed()
		require.NoError(t, err)
		bins := tarEntries(t, rc)
		rc.Close()
		for _, p := range Programs {
			h := bins["usr/local/bin/"+p]
			require.NotNil(t, h, p)
			require.Equal(t, int64(0o755), h.Mode)
			require.Equal(t, 0, h.Uid)
		}
	}
}

func TestRenderInstall(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	before, err := os.ReadFile("../../../../deploy/kustomization.yaml")
	require.NoError(t, err)
	out, err := RenderInstall("../../../../deploy", "ghcr.io/ate-dev/ate-orchestrator", digest, "v0.1.0")
	require.NoError(t, err)
	after, err := os.ReadFile("../../../../deploy/kustomization.yaml")
	require.NoError(t, err)
	require.Equal(t, before, after, "RenderInstall changed deploy/")

	images, err := ContainerImages(out)
	require.NoError(t, err)
	require.Len(t, images, 2)
	for where, img := range images {
		require.Equal(t, "ghcr.io/ate-dev/ate-orchestrator@"+digest, img, where)
	}
	objs, err := SplitYAML(out)
	require.NoError(t, err)
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		require.Equal(t, "v0.1.0", labels[VersionLabel], "%v %v", o["kind"], md["name"])
	}
	_, err = RenderInstall("../../../../deploy", "ghcr.io/x", "sha256:bad", "v0.1.0")
	require.Error(t, err)
}

func TestRenderMonitoring(t *testing.T) {
	out, err := RenderMonitoring("../../../../deploy/monitoring", "v0.1.0", "https://github.com/ate-dev/ate-orchestrator")
	require.NoError(t, err)
	objs, err := SplitYAML(out)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	require.Equal(t, "ConfigMap", objs[0]["kind"])
	data := objs[0]["data"].(map[string]any)
	require.Contains(t, data[dashboardKey], `"uid": "ate-orchestrator"`)
	require.Equal(t, "PrometheusRule", objs[1]["kind"])
	groups := objs[1]["spec"].(map[string]any)["groups"].([]any)
	require.NotEmpty(t, groups)
	// Each runbook_url is absolute: the runbook at the release's tag.
	n := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			u := r.(map[string]any)["annotations"].(map[string]any)["runbook_url"].(string)
			require.Regexp(t, `^https://github\.com/ate-dev/ate-orchestrator/blob/v0\.1\.0/docs/runbooks\.md#[a-z0-9-]+$`, u)
			n++
		}
	}
	require.Positive(t, n)
}

func TestUUIDFromHex(t *testing.T) {
	u := uuidFromHex(strings.Repeat("ff", 32))
	require.Equal(t, "ffffffff-ffff-8fff-bfff-ffffffffffff", u)
}
