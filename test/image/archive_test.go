package image

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// The release image archive the tests run, found or built once for the
// package: releaseImage waits for it.
var archive struct {
	done chan struct{}
	path string
	err  error
}

// prepareArchive finds the release archive, or starts building the
// stand-in under dir when there is none.
func prepareArchive(dir string) {
	archive.done = make(chan struct{})
	go func() {
		defer close(archive.done)
		root, err := servers.RepoRoot()
		if err != nil {
			archive.err = err
			return
		}
		if archive.path, err = findRelease(root); err != nil || archive.path != "" {
			archive.err = err
			return
		}
		archive.path, archive.err = buildStandIn(root, filepath.Join(dir, "standin"))
	}()
}

// releaseImage returns the path of the release image archive: an OCI image
// layout packed as a tar, named ate-orchestrator-<version>.oci.tar. It is
// $ATE_RELEASE_IMAGE when set, else the newest _out/release/*.oci.tar
// (`make release`), else a stand-in of the same shape built for this run
// (standin_test.go).
func releaseImage(t testing.TB) string {
	t.Helper()
	select {
	case <-archive.done:
	case <-time.After(20 * time.Minute):
		t.Fatal("building the stand-in image took more than 20 minutes")
	}
	if archive.err != nil {
		t.Fatalf("the release image: %v", archive.err)
	}
	return archive.path
}

// findRelease is $ATE_RELEASE_IMAGE, or the newest archive in
// root/_out/release, or "" when there is neither.
func findRelease(root string) (string, error) {
	if p := os.Getenv("ATE_RELEASE_IMAGE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$ATE_RELEASE_IMAGE: %w", err)
		}
		return p, nil
	}
	matches, err := filepath.Glob(filepath.Join(root, "_out", "release", "*.oci.tar"))
	if err != nil || len(matches) == 0 {
		return "", err
	}
	newest, newestTime := "", time.Time{}
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(newestTime) {
			newest, newestTime = m, fi.ModTime()
		}
	}
	return newest, nil
}

var archiveName = regexp.MustCompile(`^ate-orchestrator-(.+)\.oci\.tar$`)

// versionOf is the version an archive's binaries print: the one in its
// name, ate-orchestrator-<version>.oci.tar.
func versionOf(path string) (string, error) {
	m := archiveName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return "", fmt.Errorf("%s is not named ate-orchestrator-<version>.oci.tar", path)
	}
	return m[1], nil
}

// hostImage is the image of an archive for the host's platform (linux and
// runtime.GOARCH), unpacked in dir so podman can read it: the archive's
// OCI layout, whose index.json is rewritten to name that image alone.
// podman 4.3 (Debian 12) loads no layout whose index names more than one
// image ("more than one image in oci, choose an image"), and a release may
// nest its platforms' images in an index of their own.
type hostImage struct {
	Dir    string        // the OCI layout naming the one image
	Digest v1.Hash       // the image manifest's digest
	ID     string        // its config's digest, hex: podman's image ID
	Config v1.ConfigFile // its config
	// Platforms are the platforms the archive holds, e.g. "linux/amd64".
	Platforms []string
}

// unpackHostImage unpacks archive into dir and picks the host's image.
func unpackHostImage(archive, dir string) (*hostImage, error) {
	if err := untar(archive, dir); err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", archive, err)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is no OCI image layout: %w", archive, err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	h := &hostImage{Dir: dir}
	var found []v1.Descriptor
	if err := walkImages(idx, func(desc v1.Descriptor, img v1.Image) error {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		h.Platforms = append(h.Platforms, cf.OS+"/"+cf.Architecture)
		if cf.OS == "linux" && cf.Architecture == runtime.GOARCH {
			found = append(found, desc)
			h.Config = *cf
			name, err := img.ConfigName()
			if err != nil {
				return err
			}
			h.Digest, h.ID = desc.Digest, name.Hex
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading %s: %w", archive, err)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s has %d images for linux/%s; want 1 (it has %v)", archive, len(found), runtime.GOARCH, h.Platforms)
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json", Manifests: found}
	b, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	return h, os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644)
}

// walkImages calls f with every image of idx, nested indexes included.
func walkImages(idx v1.ImageIndex, f func(v1.Descriptor, v1.Image) error) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range im.Manifests {
		switch {
		case desc.MediaType.IsIndex():
			child, err := idx.ImageIndex(desc.Digest)
			if err != nil {
				return err
			}
			if err := walkImages(child, f); err != nil {
				return err
			}
		case desc.MediaType.IsImage():
			img, err := idx.Image(desc.Digest)
			if err != nil {
				return err
			}
			if err := f(desc, img); err != nil {
				return err
			}
		}
	}
	return nil
}

// untar unpacks the regular files and directories of a tar into dir.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the archive", h.Name)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: unexpected type %c", h.Name, h.Typeflag)
		}
	}
}

// loaded is the host's image of the release archive in the package's
// podman store, loaded once.
var loaded struct {
	once sync.Once
	img  *hostImage
	err  error
}

// loadImage loads the host's image of the release archive into pm's store
// (podman pull from the unpacked layout: nothing leaves the machine) and
// returns it; its ID is what the tests run.
func loadImage(t testing.TB, pm *podman) *hostImage {
	t.Helper()
	path := releaseImage(t)
	loaded.once.Do(func() {
		img, err := unpackHostImage(path, filepath.Join(pm.dir, "layout"))
		if err != nil {
			loaded.err = err
			return
		}
		out, err := pm.output("pull", "--quiet", "oci:"+img.Dir)
		if err != nil {
			loaded.err = err
			return
		}
		if id := strings.TrimSpace(out); id != img.ID {
			loaded.err = fmt.Errorf("podman loaded image %s; the archive's config is %s", id, img.ID)
			return
		}
		loaded.img = img
	})
	if loaded.err != nil {
		t.Fatalf("loading %s: %v", path, loaded.err)
	}
	return loaded.img
}
