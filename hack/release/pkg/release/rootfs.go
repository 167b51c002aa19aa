package release

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's user: distroless' "nonroot", numeric so that Kubernetes'
// runAsNonRoot can check it (deploy/ runs as 65532:65532).
const (
	NonrootUID = 65532
	NonrootGID = 65532
	User       = "65532:65532"
)

// CABundlePath is where Go (and most TLS stacks) look for the system's
// roots on Linux.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// CABundleModule is the module whose roots the image's CA bundle holds; the
// SBOM names it with the version go.mod requires, which is the one linked
// into the release program.
const CABundleModule = "golang.org/x/crypto/x509roots/fallback"

// entry is one file or directory of a layer.
type entry struct {
	name     string // without a leading slash
	mode     int64
	uid, gid int
	data     []byte
	src      string // when set, the file whose contents are the entry's
	dir      bool
}

// passwd and group hold root, nobody and the nonroot user, as distroless'
// static image does: enough for a process to resolve its user and for
// tools that look the user up, with no shell to log in with.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
	// Go's resolver reads it; without it, it would still use files then DNS,
	// but other resolvers would not.
	nsswitch = "hosts: files dns\n"
)

// rootfsEntries are the files of the base layer: what a static Go binary
// needs from the OS. Nothing in it is written at run time, so the root
// filesystem can be read-only; /tmp exists for an emptyDir or tmpfs mount
// (deploy/ mounts one).
func rootfsEntries(caBundle []byte) []entry {
	dir := func(name string, mode int64, uid, gid int) entry {
		return entry{name: name, mode: mode, uid: uid, gid: gid, dir: true}
	}
	file := func(name, data string) entry {
		return entry{name: name, mode: 0o644, data: []byte(data)}
	}
	return []entry{
		dir("etc", 0o755, 0, 0),
		file("etc/group", group),
		file("etc/nsswitch.conf", nsswitch),
		file("etc/passwd", passwd),
		dir("etc/ssl", 0o755, 0, 0),
		dir("etc/ssl/certs", 0o755, 0, 0),
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle},
		dir("home", 0o755, 0, 0),
		dir("home/nonroot", 0o700, NonrootUID, NonrootGID),
		dir("root", 0o700, 0, 0),
		dir("tmp", 0o1777, 0, 0),
		dir("usr", 0o755, 0, 0),
		dir("usr/local", 0o755, 0, 0),
		dir("usr/local/bin", 0o755, 0, 0),
	}
}

// CABundle is the PEM bundle of the roots of Mozilla's NSS trust store, as
// the module golang.org/x/crypto/x509roots/fallback pins them: no base image
// or host package brings them, and a pinned module keeps the bundle the same
// on every build machine. Roots that NSS constrains (distrusted after a
// date) are left out, as a PEM file cannot carry the constraint.
func CABundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// ListModule asks the go command, in the module at root, which version of
// a required module the build uses and its go.sum hash: the release
// program's own build info is no answer, as a test binary carries none.
func ListModule(ctx context.Context, root, path string) (debug.Module, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", path)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off") // root's own module, not a workspace's
	out, err := cmd.Output()
	if err != nil {
		return debug.Module{}, fmt.Errorf("go list -m %s: %w", path, err)
	}
	var m debug.Module
	if err := json.Unmarshal(out, &m); err != nil {
		return debug.Module{}, fmt.Errorf("go list -m %s: %w", path, err)
	}
	if m.Version == "" || m.Sum == "" {
		return debug.Module{}, fmt.Errorf("go list -m %s: no version or sum", path)
	}
	return m, nil
}

// binariesEntries are the programs of dir (built for one platform) at
// BinDir, executable by anyone and owned by root, so that the nonroot user
// cannot change them.
func binariesEntries(dir string) []entry {
	var es []entry
	for _, p := range Programs {
		es = append(es, entry{name: path.Join(BinDir[1:], p), mode: 0o755, src: filepath.Join(dir, p)})
	}
	return es
}

// writeTar writes the entries into a new tar file at path with every time
// set to mtime and no user or group names, so that its digest depends on
// the contents alone.
func writeTar(path string, es []entry, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, e := range es {
		if err = writeEntry(tw, e, mtime); err != nil {
			break
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX,
		Typeflag: tar.TypeReg, Size: int64(len(e.data))}
	var r io.Reader = bytes.NewReader(e.data)
	if e.dir {
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
	} else if e.src != "" {
		f, err := os.Open(e.src)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		h.Size, r = fi.Size(), f
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("writing the tar header of %s: %w", e.name, err)
	}
	if _, err := io.Copy(tw, r); err != nil {
		return fmt.Errorf("writing %s into the tar: %w", e.name, err)
	}
	return nil
}
