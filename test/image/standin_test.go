package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The stand-in for the release image, until `make release` writes
// _out/release/ate-orchestrator-<version>.oci.tar: the same shape (an OCI
// image layout packed as a tar; static binaries /usr/local/bin/{worker,
// starter,teardown}; user 65532:65532; entrypoint the worker; /etc/passwd
// with the nonroot user), for the host's platform only.

// standInVersion is what the stand-in's binaries print with --version.
const standInVersion = "v0.0.0-image-test"

// programs are the binaries of the image, in /usr/local/bin.
var programs = []string{"worker", "starter", "teardown"}

// buildStandIn builds the three binaries static (CGO_ENABLED=0), as the
// release does, and writes dir/ate-orchestrator-<standInVersion>.oci.tar.
func buildStandIn(root, dir string) (string, error) {
	bin := filepath.Join(dir, "bin")
	args := []string{"build", "-trimpath", "-ldflags", "-s -w -X ate.dev/orchestrator/internal/version.Version=" + standInVersion, "-o", bin + "/"}
	for _, p := range programs {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	layer, err := rootLayer(bin)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return "", err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{
		User:       "65532:65532",
		Cmd:        []string{"/usr/local/bin/worker"},
		Env:        []string{"PATH=/usr/local/bin"},
		WorkingDir: "/",
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	lay := filepath.Join(dir, "layout")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendImage(img,
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": standInVersion}),
	); err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "ate-orchestrator-"+standInVersion+".oci.tar")
	if err := tarDir(lay, archive); err != nil {
		return "", err
	}
	return archive, os.RemoveAll(lay)
}

// rootLayer is the image's one layer: the binaries, and /etc/passwd and
// /etc/group naming the nonroot user.
func rootLayer(bin string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"etc/", "usr/", "usr/local/", "usr/local/bin/"} {
		if err := dir(d); err != nil {
			return nil, err
		}
	}
	if err := file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")); err != nil {
		return nil, err
	}
	for _, p := range programs {
		data, err := os.ReadFile(filepath.Join(bin, p))
		if err != nil {
			return nil, err
		}
		if err := file("usr/local/bin/"+p, 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir packs the regular files and directories under dir into archive,
// with paths relative to dir (an OCI layout's oci-layout, index.json and
// blobs/ at the top).
func tarDir(dir, archive string) error {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
