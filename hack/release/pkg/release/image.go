package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotation keys of the OCI image spec, and containerd's name of an image
// in an archive (podman and docker load name the image after it).
const (
	AnnotationVersion     = "org.opencontainers.image.version"
	AnnotationRevision    = "org.opencontainers.image.revision"
	AnnotationSource      = "org.opencontainers.image.source"
	AnnotationCreated     = "org.opencontainers.image.created"
	AnnotationTitle       = "org.opencontainers.image.title"
	AnnotationDescription = "org.opencontainers.image.description"
	AnnotationRefName     = "org.opencontainers.image.ref.name"
	AnnotationLicenses    = "org.opencontainers.image.licenses"
	AnnotationImageName   = "io.containerd.image.name"
)

// The image's facts, which the Dockerfile's image shares (the release is
// their one source: deploy/dockerfile_test.go fails when the Dockerfile's
// differ; docs/decisions/0009-tooling-layout.md).

// DefaultCmd is the image's command: the worker, as in the Dockerfile. There
// is no entrypoint, so that `podman run IMAGE /usr/local/bin/starter` runs
// the starter, as Kubernetes' `command:` does in deploy/.
var DefaultCmd = []string{BinDir + "/worker"}

// Title and Description are the image's title and description labels.
const (
	Title       = "ate-orchestrator"
	Description = "WorkerPool SandboxConfig orchestration on Temporal: worker, starter and teardown"
)

// License is the SPDX identifier of the orchestrator's license (the
// repository's LICENSE), in the image's labels and the SBOM.
const License = "Apache-2.0"

// Base is the image whose filesystem the base layer reproduces (its users,
// groups, CA roots and directories: rootfsEntries), with no base image
// pulled; the Dockerfile's image starts FROM it.
const Base = "gcr.io/distroless/static:nonroot"

// Metadata says which release an image is.
type Metadata struct {
	Version  string
	Revision string
	Source   string
	Created  time.Time
}

// Labels are the image config's labels and the manifests' and index's
// annotations.
func (m Metadata) Labels() map[string]string {
	return map[string]string{
		AnnotationTitle:       Title,
		AnnotationDescription: Description,
		AnnotationLicenses:    License,
		AnnotationVersion:     m.Version,
		AnnotationRevision:    m.Revision,
		AnnotationSource:      m.Source,
		AnnotationCreated:     m.Created.UTC().Format(time.RFC3339),
	}
}

// tagPattern is the grammar of an OCI tag (distribution spec).
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// ValidTag reports whether version can tag an image.
func ValidTag(version string) error {
	if !tagPattern.MatchString(version) {
		return fmt.Errorf("version %q is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", version)
	}
	return nil
}

// ValidRepository reports whether image names a repository, with its
// registry and no tag or digest: the release adds the version as the tag
// and the digest, and a cluster pulls what install.yaml names.
func ValidRepository(image string) error {
	if image == "" {
		return fmt.Errorf("no image repository")
	}
	if _, err := name.NewRepository(image, name.StrictValidation); err != nil {
		return fmt.Errorf("image repository %q: want a repository name with no tag or digest: %w", image, err)
	}
	return nil
}

// layerFromEntries makes an OCI layer (gzip) of the entries, written to
// path so that the binaries are not held in memory.
func layerFromEntries(path string, es []entry, mtime time.Time) (v1.Layer, error) {
	if err := writeTar(path, es, mtime); err != nil {
		return nil, fmt.Errorf("writing the layer %s: %w", path, err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(path) },
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression),
		// Compressed once, not once for the digest and again for the layout.
		tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("making a layer of %s: %w", path, err)
	}
	return l, nil
}

// BaseLayer is the layer every platform's image shares: users, groups, CA
// roots and the directories (rootfsEntries).
func BaseLayer(workDir string, created time.Time) (v1.Layer, error) {
	return layerFromEntries(filepath.Join(workDir, "base.tar"), rootfsEntries(CABundle()), created)
}

// BinariesLayer is the layer of the programs built into binDir.
func BinariesLayer(binDir, workDir string, created time.Time) (v1.Layer, error) {
	return layerFromEntries(filepath.Join(workDir, "binaries.tar"), binariesEntries(binDir), created)
}

// PlatformImage assembles the image of one platform from its layers, with
// no base image: the config runs the worker as the nonroot user.
func PlatformImage(p Platform, base, binaries v1.Layer, m Metadata) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: m.Created.UTC()}
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "ate-orchestrator release: /etc (passwd, group, nsswitch.conf, CA roots), /home/nonroot, /tmp", Comment: "rootfs"}},
		mutate.Addendum{Layer: binaries, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "go build -trimpath -ldflags '" + LDFlags(m.Version) + "' ./cmd/worker ./cmd/starter ./cmd/teardown", Comment: "binaries"}},
	)
	if err != nil {
		return nil, fmt.Errorf("appending the %s layers: %w", p, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the %s image config: %w", p, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = created
	cf.Config = v1.Config{
		User:       User,
		Cmd:        DefaultCmd,
		WorkingDir: "/",
		// No secret or setting: the processes take those from the pod.
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels: m.Labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the %s image config: %w", p, err)
	}
	return mutate.Annotations(img, m.Labels()).(v1.Image), nil
}

// Index is the image index of the platforms' images, in the order given.
func Index(images []v1.Image, platforms []Platform, m Metadata) (v1.ImageIndex, error) {
	if len(images) != len(platforms) {
		return nil, fmt.Errorf("%d images for %d platforms", len(images), len(platforms))
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: platforms[i].OS, Architecture: platforms[i].Arch}},
		})
	}
	return mutate.Annotations(idx, m.Labels()).(v1.ImageIndex), nil
}

// ArchiveName is the file name of a release's OCI archive.
func ArchiveName(version string) string { return "ate-orchestrator-" + version + ".oci.tar" }

// WriteArchive writes idx as an OCI image layout packed in a tar at path
// (what `podman load -i` and the `oci-archive:` transport read): its
// index.json has one entry, the image index, named with the version
// (org.opencontainers.image.ref.name, the tag, as the OCI spec wants) and
// with the full reference image:version (io.containerd.image.name, which
// podman, docker and containerd name the loaded image after).
func WriteArchive(idx v1.ImageIndex, image, version, path, workDir string, mtime time.Time) error {
	dir := filepath.Join(workDir, "layout")
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing an earlier layout %s: %w", dir, err)
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:   version,
		AnnotationImageName: image + ":" + version,
	})); err != nil {
		return fmt.Errorf("writing the image index into the OCI layout: %w", err)
	}
	es, err := dirEntries(dir)
	if err != nil {
		return err
	}
	if err := writeTar(path, es, mtime); err != nil {
		return fmt.Errorf("packing the OCI layout into %s: %w", path, err)
	}
	return nil
}

// dirEntries are the tree under dir: paths relative to dir, in lexical
// order, owned by root, files 0644 and directories 0755, so that equal
// trees give equal bytes.
func dirEntries(dir string) ([]entry, error) {
	var es []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		e := entry{name: filepath.ToSlash(rel), mode: 0o644, src: p, dir: d.IsDir()}
		if e.dir {
			e.mode = 0o755
		}
		es = append(es, e)
		return err
	})
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	return es, err
}

// IndexDigest reads the digest of the image index that an archive's
// index.json names, without unpacking it: what install.yaml pins.
func IndexDigest(archive string) (v1.Hash, error) {
	f, err := os.Open(archive)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("opening %s: %w", archive, err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return v1.Hash{}, fmt.Errorf("%s has no index.json", archive)
		}
		if err != nil {
			return v1.Hash{}, fmt.Errorf("reading %s: %w", archive, err)
		}
		if h.Name != "index.json" {
			continue
		}
		im, err := v1.ParseIndexManifest(tr)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("parsing index.json of %s: %w", archive, err)
		}
		if len(im.Manifests) != 1 {
			return v1.Hash{}, fmt.Errorf("index.json of %s has %d entries, want 1", archive, len(im.Manifests))
		}
		return im.Manifests[0].Digest, nil
	}
}
