package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// The kubectl plugin `kubectl ate` (cmd/kubectl-ate): a release builds it
// for every PluginPlatforms, packs each build with the LICENSE into a
// .tar.gz, and writes a krew plugin manifest naming each archive by its
// URL and sha256, so that `kubectl krew install` (from an index holding
// the manifest, or with --manifest and --archive) installs it.
const (
	// PluginBinary is the plugin's program; kubectl runs it as `kubectl ate`.
	PluginBinary = "kubectl-ate"
	// KrewPluginName is the plugin's name in a krew index (plugins/ate.yaml).
	KrewPluginName = "ate"
	// KrewManifestName is the krew manifest's file in the release.
	KrewManifestName = "kubectl-ate.krew.yaml"
	// KrewAPIVersion and KrewKind are those of krew's index format.
	KrewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	KrewKind       = "Plugin"
)

// PluginPlatforms are the platforms the plugin is released for: where
// operators run kubectl.
var PluginPlatforms = []Platform{
	{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"},
	{OS: "darwin", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"},
}

// PluginArchiveName is the plugin's archive for p.
func PluginArchiveName(version string, p Platform) string {
	return fmt.Sprintf("%s-%s-%s-%s.tar.gz", PluginBinary, version, p.OS, p.Arch)
}

// BuildPlugin compiles the plugin for p from the module at root into
// dir/kubectl-ate, as reproducibly as the image's binaries (BuildEnv: no
// cgo, so one static binary per platform; -trimpath, no VCS stamping).
func BuildPlugin(ctx context.Context, root, version string, p Platform, dir string, log io.Writer) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the %s plugin's directory: %w", p, err)
	}
	out := filepath.Join(dir, PluginBinary)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+LDFlags(version), "-o", out, "./cmd/"+PluginBinary)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), BuildEnv(p)...)
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Fprintf(log, "%s go %v\n", p, cmd.Args[1:])
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build of %s for %s: %w", PluginBinary, p, err)
	}
	return out, nil
}

// WritePluginArchive writes a .tar.gz of the plugin's binary and the
// license, at the archive's top (krew's manifest names them so), every
// entry and the gzip header stamped with created and no owner, so that two
// cuts write the same bytes.
func WritePluginArchive(out, binary, license string, created time.Time) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = created
	tw := tar.NewWriter(gz)
	for _, e := range []struct {
		name, src string
		mode      int64
	}{{PluginBinary, binary, 0o755}, {"LICENSE", license, 0o644}} {
		b, err := os.ReadFile(e.src)
		if err != nil {
			return fmt.Errorf("reading %s for %s: %w", e.src, filepath.Base(out), err)
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Typeflag: tar.TypeReg, Size: int64(len(b)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Base(out), err)
		}
		if _, err := tw.Write(b); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Base(out), err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(out), err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(out), err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(out), err)
	}
	return nil
}

// KrewManifest is a krew plugin manifest (krew's index format).
type KrewManifest struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   KrewMetadata `json:"metadata"`
	Spec       KrewSpec     `json:"spec"`
}

// KrewMetadata names the plugin.
type KrewMetadata struct {
	Name string `json:"name"`
}

// KrewSpec is the plugin's version, description and one entry per platform.
type KrewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is the archive of one platform: krew picks the entry whose
// selector matches the machine's os and arch labels.
type KrewPlatform struct {
	Selector KrewSelector   `json:"selector"`
	URI      string         `json:"uri"`
	SHA256   string         `json:"sha256"`
	Bin      string         `json:"bin"`
	Files    []KrewFileCopy `json:"files"`
}

// KrewSelector is a label selector on os and arch (GOOS and GOARCH).
type KrewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// KrewFileCopy copies a file of the archive into the plugin's directory.
type KrewFileCopy struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ValidKrewVersion reports whether version is one krew accepts: semantic,
// with a leading v (v0.1.0). `make release` of an untagged commit (a
// version such as 848c611-dirty) has none, and writes no manifest.
func ValidKrewVersion(version string) error {
	if !strings.HasPrefix(version, "v") {
		return fmt.Errorf("version %q does not start with v", version)
	}
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v")); err != nil {
		return fmt.Errorf("version %q is not semantic (vMAJOR.MINOR.PATCH): %w", version, err)
	}
	return nil
}

// DownloadURL is where a release's file is published: the source
// repository's release of version (GitHub's layout).
func DownloadURL(source, version, file string) string {
	return strings.TrimSuffix(source, "/") + "/releases/download/" + version + "/" + file
}

// RenderKrewManifest is the krew manifest of the plugin's archives of a
// release, sums mapping each platform to its archive's hex sha256.
func RenderKrewManifest(version, source string, sums map[Platform]string) ([]byte, error) {
	if err := ValidKrewVersion(version); err != nil {
		return nil, fmt.Errorf("krew manifest: %w", err)
	}
	m := KrewManifest{
		APIVersion: KrewAPIVersion, Kind: KrewKind,
		Metadata: KrewMetadata{Name: KrewPluginName},
		Spec: KrewSpec{
			Version:          version,
			Homepage:         source,
			ShortDescription: "Drive and watch SandboxConfig rollouts of the ate orchestrator",
			Description: "Watches, drives (pause, resume, retry, promote, abort) and previews the staged\n" +
				"rollouts of ate.dev SandboxConfigs, and explains which SandboxConfig a WorkerPool\n" +
				"runs and why, with nothing but Kubernetes RBAC.\n",
		},
	}
	for _, p := range PluginPlatforms {
		sum, ok := sums[p]
		if !ok {
			return nil, fmt.Errorf("krew manifest: no archive for %s", p)
		}
		archive := PluginArchiveName(version, p)
		m.Spec.Platforms = append(m.Spec.Platforms, KrewPlatform{
			Selector: KrewSelector{MatchLabels: map[string]string{"os": p.OS, "arch": p.Arch}},
			URI:      DownloadURL(source, version, archive),
			SHA256:   sum,
			Bin:      PluginBinary,
			Files:    []KrewFileCopy{{From: PluginBinary, To: "."}, {From: "LICENSE", To: "."}},
		})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("krew manifest: %w", err)
	}
	return b, nil
}

// writePlugin builds, packs and describes the plugin into cfg.OutDir, and
// returns the files it wrote.
func writePlugin(ctx context.Context, cfg Config, work string) ([]string, error) {
	license := filepath.Join(cfg.Root, "LICENSE")
	sums := map[Platform]string{}
	var files []string
	for _, p := range PluginPlatforms {
		bin, err := BuildPlugin(ctx, cfg.Root, cfg.Version, p, filepath.Join(work, "plugin", p.OS+"_"+p.Arch), cfg.Log)
		if err != nil {
			return nil, err
		}
		archive := PluginArchiveName(cfg.Version, p)
		if err := WritePluginArchive(filepath.Join(cfg.OutDir, archive), bin, license, cfg.Created); err != nil {
			return nil, err
		}
		if sums[p], err = fileSHA256(filepath.Join(cfg.OutDir, archive)); err != nil {
			return nil, fmt.Errorf("checksum of %s: %w", archive, err)
		}
		files = append(files, archive)
	}
	if err := ValidKrewVersion(cfg.Version); err != nil {
		fmt.Fprintf(cfg.Log, "no krew manifest: %v\n", err)
		return files, nil
	}
	m, err := RenderKrewManifest(cfg.Version, cfg.Source, sums)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, KrewManifestName), m, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", KrewManifestName, err)
	}
	return append(files, KrewManifestName), nil
}
