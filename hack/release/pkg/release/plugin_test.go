package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestValidKrewVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"v0.1.0", true},
		{"v1.2.3-rc.1", true},
		{"v0.0.0-releasetest", true},
		{"0.1.0", false},
		{"v0.1", false},
		{"848c611-dirty", false},
		{"v0.1.0-3-g848c611-dirty", true}, // git describe past a tag: a prerelease
	} {
		t.Run(tc.version, func(t *testing.T) {
			err := ValidKrewVersion(tc.version)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

// TestWritePluginArchive: the binary and the license at the archive's top,
// stamped with the release's time and no owner; two writes, the same bytes.
func TestWritePluginArchive(t *testing.T) {
	dir := t.TempDir()
	bin, license := filepath.Join(dir, "bin"), filepath.Join(dir, "LICENSE")
	require.NoError(t, os.WriteFile(bin, []byte("\x7fELF plugin"), 0o755))
	require.NoError(t, os.WriteFile(license, []byte("Apache License"), 0o644))
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, b := filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "b.tar.gz")
	require.NoError(t, WritePluginArchive(a, bin, license, created))
	require.NoError(t, WritePluginArchive(b, bin, license, created))
	ab, err := os.ReadFile(a)
	require.NoError(t, err)
	bb, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, ab, bb)

	f, err := os.Open(a)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	require.Equal(t, created, gz.ModTime.UTC())
	tr := tar.NewReader(gz)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		got[h.Name] = string(body)
		require.True(t, h.ModTime.Equal(created), h.Name)
		require.Zero(t, h.Uid)
		require.Empty(t, h.Uname)
		if h.Name == PluginBinary {
			require.Equal(t, int64(0o755), h.Mode)
		}
	}
	require.Equal(t, map[string]string{PluginBinary: "\x7fELF plugin", "LICENSE": "Apache License"}, got)
}

func TestRenderKrewManifest(t *testing.T) {
	sums := map[Platform]string{}
	for i, p := range PluginPlatforms {
		sums[p] = strings.Repeat(string(rune('a'+i)), 64)
	}
	b, err := RenderKrewManifest("v0.1.0", "https://github.com/ate-dev/ate-orchestrator", sums)
	require.NoError(t, err)
	var m KrewManifest
	require.NoError(t, yaml.UnmarshalStrict(b, &m))
	require.Equal(t, KrewAPIVersion, m.APIVersion)
	require.Equal(t, "Plugin", m.Kind)
	require.Equal(t, "ate", m.Metadata.Name)
	require.Equal(t, "v0.1.0", m.Spec.Version)
	require.Len(t, m.Spec.Platforms, 4)
	for i, p := range PluginPlatforms {
		e := m.Spec.Platforms[i]
		require.Equal(t, map[string]string{"os": p.OS, "arch": p.Arch}, e.Selector.MatchLabels)
		require.Equal(t, "https://github.com/ate-dev/ate-orchestrator/releases/download/v0.1.0/kubectl-ate-v0.1.0-"+p.OS+"-"+p.Arch+".tar.gz", e.URI)
		require.Equal(t, sums[p], e.SHA256)
		require.Equal(t, "kubectl-ate", e.Bin)
	}

	_, err = RenderKrewManifest("848c611-dirty", "https://example", sums)
	require.ErrorContains(t, err, "does not start with v")
	delete(sums, PluginPlatforms[3])
	_, err = RenderKrewManifest("v0.1.0", "https://example", sums)
	require.ErrorContains(t, err, "no archive for darwin/arm64")
}
