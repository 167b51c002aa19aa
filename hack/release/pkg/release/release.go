// Package release cuts a release of the orchestrator without a container
// daemon or a registry: it builds the worker, starter and teardown with the
// Go toolchain for each platform, assembles their image with
// go-containerregistry from nothing but those binaries and a few files,
// and writes, into one directory, the image as an OCI archive, its SBOM,
// install.yaml (deploy/ with the image pinned by digest), monitoring.yaml,
// the kubectl plugin kubectl-ate for linux and darwin (amd64, arm64), each
// a .tar.gz with the LICENSE, its krew manifest (plugin.go), and
// SHA256SUMS. hack/release is its command; `make release` runs it.
//
// Two runs on one commit, with one Go toolchain, write the same bytes: the
// builds are reproducible (-trimpath, no VCS stamping) and every time in
// the artifacts is the commit's time or SOURCE_DATE_EPOCH.
package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Config is what a release is cut from and into.
type Config struct {
	// Root is the repository's root: go.mod, cmd/, deploy/.
	Root string
	// OutDir receives the artifacts; created when missing. Files of the
	// same names are replaced; others are left, and SHA256SUMS does not
	// list them.
	OutDir string
	// Version is what the binaries print with --version and the image's tag.
	Version string
	// Image is the repository the image is published to, with no tag:
	// install.yaml names Image@<index digest>.
	Image string
	// Metadata of the image's labels. Version is set from Version.
	Metadata
	// Chart, when set, packages the Helm chart into outDir for the release's
	// version and pinned image reference, and returns the path of the .tgz,
	// which joins the artifacts and SHA256SUMS.
	Chart func(outDir, version, image string) (string, error)
	// Log receives progress, the go command's output included.
	Log io.Writer
}

// Result is what a release wrote.
type Result struct {
	// Artifacts are the file names written into OutDir, SHA256SUMS last.
	Artifacts []string
	// IndexDigest is the image index's digest ("sha256:...").
	IndexDigest string
	// PinnedImage is Image@IndexDigest, the reference install.yaml uses.
	PinnedImage string
	// ManifestDigests are the platforms' image manifest digests.
	ManifestDigests map[Platform]string
}

// Run cuts the release.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := ValidTag(cfg.Version); err != nil {
		return nil, err
	}
	if err := ValidRepository(cfg.Image); err != nil {
		return nil, err
	}
	cfg.Metadata.Version = cfg.Version
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the release directory: %w", err)
	}
	work, err := os.MkdirTemp("", "ate-release-")
	if err != nil {
		return nil, fmt.Errorf("creating a work directory: %w", err)
	}
	defer os.RemoveAll(work)

	res := &Result{ManifestDigests: map[Platform]string{}}
	base, err := BaseLayer(work, cfg.Created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	var images []v1.Image
	var binaries []Binary
	for _, p := range Platforms {
		binDir := filepath.Join(work, p.OS+"_"+p.Arch, "bin")
		if err := BuildBinaries(ctx, cfg.Root, cfg.Version, p, binDir, cfg.Log); err != nil {
			return nil, err
		}
		bs, err := ReadBinaries(binDir, p)
		if err != nil {
			return nil, err
		}
		binaries = append(binaries, bs...)
		layer, err := BinariesLayer(binDir, filepath.Dir(binDir), cfg.Created)
		if err != nil {
			return nil, fmt.Errorf("%s binaries layer: %w", p, err)
		}
		img, err := PlatformImage(p, base, layer, cfg.Metadata)
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("%s image digest: %w", p, err)
		}
		res.ManifestDigests[p] = d.String()
		fmt.Fprintf(cfg.Log, "%s image %s\n", p, d)
		images = append(images, img)
	}
	idx, err := Index(images, Platforms, cfg.Metadata)
	if err != nil {
		return nil, err
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, fmt.Errorf("image index digest: %w", err)
	}
	res.IndexDigest = d.String()
	res.PinnedImage = PinnedImage(cfg.Image, res.IndexDigest)
	fmt.Fprintf(cfg.Log, "image index %s\n", res.PinnedImage)

	archive := ArchiveName(cfg.Version)
	if err := WriteArchive(idx, cfg.Image, cfg.Version, filepath.Join(cfg.OutDir, archive), work, cfg.Created); err != nil {
		return nil, err
	}
	res.Artifacts = append(res.Artifacts, archive)

	// The bundle is linked into this program, which the hack module builds:
	// its version and sum are that module's, not the product's.
	ca, err := ListModule(ctx, filepath.Join(cfg.Root, "hack"), CABundleModule)
	if err != nil {
		return nil, fmt.Errorf("the CA roots' module: %w", err)
	}
	bom, err := SBOM(SBOMInput{
		Metadata: cfg.Metadata, Image: cfg.Image, IndexDigest: res.IndexDigest, Binaries: binaries, CABundle: ca,
	})
	if err != nil {
		return nil, fmt.Errorf("SBOM: %w", err)
	}
	sbom := SBOMName(cfg.Version)
	if err := WriteSBOM(bom, filepath.Join(cfg.OutDir, sbom)); err != nil {
		return nil, err
	}
	res.Artifacts = append(res.Artifacts, sbom)

	install, err := RenderInstall(filepath.Join(cfg.Root, "deploy"), cfg.Image, res.IndexDigest, cfg.Version)
	if err != nil {
		return nil, err
	}
	mon, err := RenderMonitoring(filepath.Join(cfg.Root, "deploy", "monitoring"), cfg.Version, cfg.Metadata.Source)
	if err != nil {
		return nil, err
	}
	for name, b := range map[string][]byte{InstallName: install, MonitoringName: mon} {
		if err := os.WriteFile(filepath.Join(cfg.OutDir, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	res.Artifacts = append(res.Artifacts, InstallName, MonitoringName)

	if cfg.Chart != nil {
		chart, err := cfg.Chart(cfg.OutDir, cfg.Version, res.PinnedImage)
		if err != nil {
			return nil, fmt.Errorf("Helm chart: %w", err)
		}
		if filepath.Clean(filepath.Dir(chart)) != filepath.Clean(cfg.OutDir) {
			return nil, fmt.Errorf("Helm chart: %s is not in %s", chart, cfg.OutDir)
		}
		res.Artifacts = append(res.Artifacts, filepath.Base(chart))
	}

	plugin, err := writePlugin(ctx, cfg, work)
	if err != nil {
		return nil, fmt.Errorf("kubectl plugin: %w", err)
	}
	res.Artifacts = append(res.Artifacts, plugin...)

	if err := WriteChecksums(cfg.OutDir, res.Artifacts); err != nil {
		return nil, err
	}
	res.Artifacts = append(res.Artifacts, ChecksumsName)
	return res, nil
}

// Git is what the release takes from the repository's git: the commit, its
// time, and whether the work tree differs from it.
type Git struct {
	Commit     string
	CommitTime time.Time
	Dirty      bool
}

// ReadGit reads Git of the work tree at root.
func ReadGit(ctx context.Context, root string) (Git, error) {
	out, err := gitOut(ctx, root, "show", "-s", "--format=%H %ct", "HEAD")
	if err != nil {
		return Git{}, err
	}
	commit, ct, _ := strings.Cut(out, " ")
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Git{}, fmt.Errorf("commit time %q: %w", ct, err)
	}
	status, err := gitOut(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return Git{}, err
	}
	return Git{Commit: commit, CommitTime: time.Unix(sec, 0).UTC(), Dirty: status != ""}, nil
}

// Revision is the org.opencontainers.image.revision of a build of g: the
// commit, with "-dirty" when the work tree has changes the commit does not,
// as the image is then not that commit's.
func (g Git) Revision() string {
	if g.Dirty {
		return g.Commit + "-dirty"
	}
	return g.Commit
}

// SourceDate is the time of every timestamp in a release: SOURCE_DATE_EPOCH
// when set (reproducible-builds.org), the commit's time otherwise.
func SourceDate(sourceDateEpoch string, commitTime time.Time) (time.Time, error) {
	if sourceDateEpoch == "" {
		return commitTime.UTC(), nil
	}
	sec, err := strconv.ParseInt(sourceDateEpoch, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", sourceDateEpoch)
	}
	return time.Unix(sec, 0).UTC(), nil
}
