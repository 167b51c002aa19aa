package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/hack/release/pkg/release"
)

// pluginArchive reads a plugin archive of the release: its entries by name.
func pluginArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		require.Equal(t, byte(tar.TypeReg), h.Typeflag, h.Name)
		require.True(t, h.ModTime.Equal(created), "%s is stamped with the release's time", h.Name)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
}

// TestPluginArchives: one archive per platform, each the plugin's binary
// for that platform (static, the release's version stamped in) and the
// LICENSE, at the archive's top as the krew manifest names them.
func TestPluginArchives(t *testing.T) {
	dir, _ := cut(t)
	license, err := os.ReadFile(filepath.Join(root(t), "LICENSE"))
	require.NoError(t, err)
	for _, p := range release.PluginPlatforms {
		t.Run(p.OS+"-"+p.Arch, func(t *testing.T) {
			files := pluginArchive(t, filepath.Join(dir, release.PluginArchiveName(version, p)))
			require.Len(t, files, 2)
			require.Equal(t, license, files["LICENSE"])
			bin := files[release.PluginBinary]
			require.NotEmpty(t, bin)

			switch p.OS {
			case "linux":
				f, err := elf.NewFile(bytes.NewReader(bin))
				require.NoError(t, err)
				require.Equal(t, map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch], f.Machine)
				require.Nil(t, f.Section(".interp"), "static: no dynamic loader")
			case "darwin":
				f, err := macho.NewFile(bytes.NewReader(bin))
				require.NoError(t, err)
				require.Equal(t, map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.Arch], f.Cpu)
			}
			bi, err := buildinfo.Read(bytes.NewReader(bin))
			require.NoError(t, err)
			require.Equal(t, "ate.dev/orchestrator/cmd/kubectl-ate", bi.Path)
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			require.Equal(t, "0", settings["CGO_ENABLED"])
			require.Equal(t, p.OS, settings["GOOS"])
			require.Equal(t, p.Arch, settings["GOARCH"])
			require.Equal(t, "true", settings["-trimpath"])
			// -trimpath keeps -ldflags out of the build info: the version
			// is in the binary's data, and the build of this machine's
			// platform says it.
			require.Contains(t, string(bin), version)
			if p.OS == runtime.GOOS && p.Arch == runtime.GOARCH {
				path := filepath.Join(t.TempDir(), release.PluginBinary)
				require.NoError(t, os.WriteFile(path, bin, 0o755))
				out, err := exec.Command(path, "version").CombinedOutput()
				require.NoError(t, err, "%s", out)
				require.Equal(t, release.PluginBinary+" "+version+"\n", string(out))
			}
		})
	}
}

// TestKrewManifest: the manifest is krew's index format, names the
// release's version, and has one platform per archive whose selector is
// the archive's os and arch and whose sha256 is the archive's (as
// SHA256SUMS has it too).
func TestKrewManifest(t *testing.T) {
	dir, _ := cut(t)
	b, err := os.ReadFile(filepath.Join(dir, release.KrewManifestName))
	require.NoError(t, err)
	var m release.KrewManifest
	require.NoError(t, yaml.UnmarshalStrict(b, &m))
	require.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", m.APIVersion)
	require.Equal(t, "Plugin", m.Kind)
	require.Equal(t, "ate", m.Metadata.Name)
	require.Equal(t, version, m.Spec.Version)
	require.NotEmpty(t, m.Spec.ShortDescription)

	sumsFile, err := os.ReadFile(filepath.Join(dir, release.ChecksumsName))
	require.NoError(t, err)
	sums, err := release.ParseChecksums(sumsFile)
	require.NoError(t, err)
	require.Contains(t, sums, release.KrewManifestName)

	require.Len(t, m.Spec.Platforms, len(release.PluginPlatforms))
	seen := map[string]bool{}
	for _, e := range m.Spec.Platforms {
		labels := e.Selector.MatchLabels
		require.Len(t, labels, 2, "a selector of os and arch")
		p := release.Platform{OS: labels["os"], Arch: labels["arch"]}
		require.Contains(t, release.PluginPlatforms, p)
		require.False(t, seen[p.String()], "%s twice", p)
		seen[p.String()] = true
		archive := release.PluginArchiveName(version, p)
		require.Equal(t, source+"/releases/download/"+version+"/"+archive, e.URI)
		archiveBytes, err := os.ReadFile(filepath.Join(dir, archive))
		require.NoError(t, err)
		require.Equal(t, sha256Hex(archiveBytes), e.SHA256, "the manifest's sha256 of %s", archive)
		require.Equal(t, sums[archive], e.SHA256, "SHA256SUMS agrees")
		require.Equal(t, release.PluginBinary, e.Bin)
		files := pluginArchive(t, filepath.Join(dir, archive))
		for _, f := range e.Files {
			require.Contains(t, files, f.From, "the manifest copies %s from %s", f.From, archive)
		}
	}
}
