// Package release_test cuts a real release (what `make release` does: both
// platforms built by the go command, the image assembled, the manifests
// rendered) into a temporary directory and checks every artifact from the
// outside: the OCI archive's index and each image's config and layers, the
// binaries in them, the SBOM against go.mod and go.sum, SHA256SUMS, and
// install.yaml's pinned image against the archive's digest. A second cut of
// the same commit, on the same build cache, must write the same bytes.
package release_test

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/hack/release/pkg/release"
)

const (
	version = "v0.0.0-releasetest"
	image   = "ghcr.io/ate-dev/ate-orchestrator"
	source  = "https://github.com/ate-dev/ate-orchestrator"
)

// created is the fixed time of the test's releases.
var created = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func root(t testing.TB) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	require.NoError(t, err)
	return r
}

// cutRelease cuts a release into a new temporary directory.
func cutRelease(t testing.TB, dir string) *release.Result {
	t.Helper()
	// On a cold build cache this compiles every dependency twice more
	// (-trimpath, and for arm64): 35 minutes of wall time on 2 cores shared
	// with four other builds; warm, it links six binaries in under a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	g, err := release.ReadGit(ctx, root(t))
	require.NoError(t, err)
	start := time.Now()
	res, err := release.Run(ctx, release.Config{
		Root:     root(t),
		OutDir:   dir,
		Version:  version,
		Image:    image,
		Metadata: release.Metadata{Revision: g.Revision(), Source: source, Created: created},
		// As hack/release packages it.
		Chart: func(outDir, version, image string) (string, error) {
			return helmchart.Package(filepath.Join(root(t), "deploy", "chart"), outDir, version, image)
		},
		Log: testLog{t},
	})
	require.NoError(t, err)
	t.Logf("release cut in %s: %s", time.Since(start).Round(time.Second), res.PinnedImage)
	return res
}

type testLog struct{ t testing.TB }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

var (
	once   sync.Once
	outDir string
	result *release.Result
	// unpacked is the OCI layout of the archive, unpacked.
	unpacked string
	failed   bool
)

// cut is the release every test but the re-cut one checks, cut once per
// test binary.
func cut(t *testing.T) (string, *release.Result) {
	t.Helper()
	once.Do(func() {
		failed = true
		var err error
		outDir, err = os.MkdirTemp("", "ate-release-test-")
		require.NoError(t, err)
		result = cutRelease(t, outDir)
		unpacked, err = os.MkdirTemp("", "ate-release-layout-")
		require.NoError(t, err)
		untar(t, filepath.Join(outDir, release.ArchiveName(version)), unpacked)
		failed = false
	})
	if failed {
		t.Fatal("the release failed to cut (see the first test's log)")
	}
	return outDir, result
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{outDir, unpacked} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// untar unpacks a tar stream into dir, refusing paths that leave it.
func untar(t testing.TB, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		require.True(t, filepath.IsLocal(h.Name), h.Name)
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, 0o644))
		default:
			t.Fatalf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
	}
}

// imageIndex is the archive's image index and index.json's one entry.
func imageIndex(t *testing.T) (v1.ImageIndex, v1.Descriptor) {
	cut(t)
	top, err := layout.ImageIndexFromPath(unpacked)
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1, "index.json names one image index")
	desc := im.Manifests[0]
	idx, err := top.ImageIndex(desc.Digest)
	require.NoError(t, err)
	return idx, desc
}

func TestArchive(t *testing.T) {
	dir, res := cut(t)
	require.Equal(t, []string{
		"ate-orchestrator-" + version + ".oci.tar",
		"ate-orchestrator-" + version + ".sbom.cdx.json",
		"install.yaml",
		"monitoring.yaml",
		"ate-orchestrator-" + strings.TrimPrefix(version, "v") + ".tgz",
		"kubectl-ate-" + version + "-linux-amd64.tar.gz",
		"kubectl-ate-" + version + "-linux-arm64.tar.gz",
		"kubectl-ate-" + version + "-darwin-amd64.tar.gz",
		"kubectl-ate-" + version + "-darwin-arm64.tar.gz",
		"kubectl-ate.krew.yaml",
		"SHA256SUMS",
	}, res.Artifacts)
	for _, a := range res.Artifacts {
		require.FileExists(t, filepath.Join(dir, a))
	}
	b, err := os.ReadFile(filepath.Join(unpacked, "oci-layout"))
	require.NoError(t, err)
	require.JSONEq(t, `{"imageLayoutVersion": "1.0.0"}`, string(b))

	idx, desc := imageIndex(t)
	require.Equal(t, "application/vnd.oci.image.index.v1+json", string(desc.MediaType))
	require.Equal(t, res.IndexDigest, desc.Digest.String())
	require.Equal(t, version, desc.Annotations["org.opencontainers.image.ref.name"])
	require.Equal(t, image+":"+version, desc.Annotations["io.containerd.image.name"])
	d, err := idx.Digest()
	require.NoError(t, err)
	require.Equal(t, res.IndexDigest, d.String())
	fromArchive, err := release.IndexDigest(filepath.Join(dir, release.ArchiveName(version)))
	require.NoError(t, err)
	require.Equal(t, res.IndexDigest, fromArchive.String())

	im, err := idx.IndexManifest()
	require.NoError(t, err)
	var platforms []string
	for _, m := range im.Manifests {
		require.Equal(t, "application/vnd.oci.image.manifest.v1+json", string(m.MediaType))
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	require.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)
	require.Equal(t, version, im.Annotations["org.opencontainers.image.version"])
}

// platformImage is the image of one platform of the archive.
func platformImage(t *testing.T, arch string) v1.Image {
	idx, _ := imageIndex(t)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, m := range im.Manifests {
		if m.Platform.Architecture == arch {
			img, err := idx.Image(m.Digest)
			require.NoError(t, err)
			return img
		}
	}
	t.Fatalf("no %s image", arch)
	return nil
}

// files lists the image's filesystem: path → header and contents.
type file struct {
	h    *tar.Header
	data []byte
}

func imageFiles(t *testing.T, img v1.Image) map[string]file {
	layers, err := img.Layers()
	require.NoError(t, err)
	fs := map[string]file{}
	for _, l := range layers {
		mt, err := l.MediaType()
		require.NoError(t, err)
		require.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", string(mt))
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			fs["/"+strings.TrimSuffix(h.Name, "/")] = file{h: h, data: b}
		}
		rc.Close()
	}
	return fs
}

var arches = []struct {
	arch    string
	machine elf.Machine
}{
	{"amd64", elf.EM_X86_64},
	{"arm64", elf.EM_AARCH64},
}

func TestImageConfig(t *testing.T) {
	_, res := cut(t)
	g, err := release.ReadGit(context.Background(), root(t))
	require.NoError(t, err)
	for _, a := range arches {
		t.Run(a.arch, func(t *testing.T) {
			img := platformImage(t, a.arch)
			d, err := img.Digest()
			require.NoError(t, err)
			require.Equal(t, res.ManifestDigests[release.Platform{OS: "linux", Arch: a.arch}], d.String())
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, "linux", cf.OS)
			require.Equal(t, a.arch, cf.Architecture)
			require.True(t, created.Equal(cf.Created.Time))
			require.Equal(t, "65532:65532", cf.Config.User)
			require.Equal(t, []string{"/usr/local/bin/worker"}, cf.Config.Cmd)
			require.Empty(t, cf.Config.Entrypoint)
			require.Empty(t, cf.Config.Volumes, "a volume would need a writable mount")
			for k, v := range map[string]string{
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": g.Revision(),
				"org.opencontainers.image.source":   source,
				"org.opencontainers.image.created":  "2026-12-01T00:00:00Z",
				"org.opencontainers.image.licenses": "Apache-2.0", // LICENSE
			} {
				require.Equal(t, v, cf.Config.Labels[k], k)
			}
			for _, e := range cf.Config.Env {
				name, _, _ := strings.Cut(e, "=")
				require.Equal(t, "PATH", name, "the image sets only PATH, no setting or secret")
			}
			m, err := img.Manifest()
			require.NoError(t, err)
			require.Equal(t, version, m.Annotations["org.opencontainers.image.version"])
			require.Len(t, cf.History, 2)
			for _, h := range cf.History {
				require.True(t, created.Equal(h.Created.Time))
			}
		})
	}
}

func TestImageFiles(t *testing.T) {
	for _, a := range arches {
		t.Run(a.arch, func(t *testing.T) {
			fs := imageFiles(t, platformImage(t, a.arch))
			require.Contains(t, string(fs["/etc/passwd"].data), "nonroot:x:65532:65532:")
			require.Contains(t, string(fs["/etc/group"].data), "nonroot:x:65532:")
			require.Contains(t, string(fs["/etc/ssl/certs/ca-certificates.crt"].data), "-----BEGIN CERTIFICATE-----")
			for p, f := range fs {
				// Root owns everything but the user's home: the user can change
				// nothing of the image, and nothing needs writing but /tmp,
				// which a pod mounts.
				if p != "/home/nonroot" {
					require.Equal(t, 0, f.h.Uid, p)
				}
				if p != "/tmp" {
					require.Zero(t, f.h.Mode&0o002, "%s is writable by anyone", p)
				}
				require.True(t, created.Equal(f.h.ModTime), p)
			}
			for _, prog := range release.Programs {
				t.Run(prog, func(t *testing.T) {
					f, ok := fs["/usr/local/bin/"+prog]
					require.True(t, ok)
					require.Equal(t, int64(0o755), f.h.Mode)
					path := filepath.Join(t.TempDir(), prog)
					require.NoError(t, os.WriteFile(path, f.data, 0o755))

					ef, err := elf.Open(path)
					require.NoError(t, err)
					defer ef.Close()
					require.Equal(t, a.machine, ef.Machine)
					for _, p := range ef.Progs {
						require.NotEqual(t, elf.PT_INTERP, p.Type, "dynamically linked: has an interpreter")
					}
					libs, err := ef.ImportedLibraries()
					require.NoError(t, err)
					require.Empty(t, libs)

					bi, err := buildinfo.ReadFile(path)
					require.NoError(t, err)
					require.Equal(t, "ate.dev/orchestrator/cmd/"+prog, bi.Path)
					settings := map[string]string{}
					for _, s := range bi.Settings {
						settings[s.Key] = s.Value
					}
					require.Equal(t, "0", settings["CGO_ENABLED"])
					require.Equal(t, "true", settings["-trimpath"])
					require.Equal(t, a.arch, settings["GOARCH"])
					// -trimpath keeps -ldflags out of the build info: the version
					// string itself is in the binary.
					require.Contains(t, string(f.data), version)

					if a.arch == runtime.GOARCH && runtime.GOOS == "linux" {
						out, err := exec.Command(path, "--version").CombinedOutput()
						require.NoError(t, err, string(out))
						require.Equal(t, prog+" "+version+"\n", string(out))
					}
				})
			}
		})
	}
}

// goMod reads the require blocks of the go.mod in the module directory
// dir: module → version.
func goMod(t *testing.T, dir string) map[string]string {
	f, err := os.Open(filepath.Join(root(t), dir, "go.mod"))
	require.NoError(t, err)
	defer f.Close()
	reqs := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			in = true
		case line == ")":
			in = false
		case in || strings.HasPrefix(line, "require "):
			fields := strings.Fields(strings.TrimPrefix(line, "require "))
			require.GreaterOrEqual(t, len(fields), 2, line)
			reqs[fields[0]] = fields[1]
		}
	}
	require.NoError(t, sc.Err())
	return reqs
}

// goSum reads the hashes of module contents of the go.sum in the module
// directory dir: "path version" → h1:...
func goSum(t *testing.T, dir string) map[string]string {
	b, err := os.ReadFile(filepath.Join(root(t), dir, "go.sum"))
	require.NoError(t, err)
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			sums[f[0]+" "+f[1]] = f[2]
		}
	}
	return sums
}

// linkedModules asks the go command which modules the programs import for
// one platform: what the SBOM must list.
func linkedModules(t *testing.T, arch string) map[string]string {
	args := []string{"list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}"}
	for _, p := range release.Programs {
		args = append(args, "./cmd/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	out, err := cmd.Output()
	require.NoError(t, err)
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, v, ok := strings.Cut(line, " "); ok {
			mods[path] = v
		}
	}
	return mods
}

func TestSBOM(t *testing.T) {
	dir, res := cut(t)
	f, err := os.Open(filepath.Join(dir, release.SBOMName(version)))
	require.NoError(t, err)
	defer f.Close()
	var bom cdx.BOM
	require.NoError(t, cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom))
	require.Equal(t, cdx.SpecVersion1_6, bom.SpecVersion)
	require.NotNil(t, bom.Metadata.Component)
	require.Equal(t, cdx.ComponentTypeContainer, bom.Metadata.Component.Type)
	require.Equal(t, image, bom.Metadata.Component.Name)
	require.Equal(t, version, bom.Metadata.Component.Version)
	require.Equal(t, strings.TrimPrefix(res.IndexDigest, "sha256:"), (*bom.Metadata.Component.Hashes)[0].Value)
	require.Equal(t, &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}}, bom.Metadata.Component.Licenses, "LICENSE")

	reqs, sums := goMod(t, "."), goSum(t, ".")
	// The image's CA roots are the release program's, pinned by the hack
	// module, which builds it; the binaries' modules are the product's.
	reqs[release.CABundleModule] = goMod(t, "hack")[release.CABundleModule]
	for k, v := range goSum(t, "hack") {
		if strings.HasPrefix(k, release.CABundleModule+" ") {
			sums[k] = v
		}
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	require.NoError(t, err)

	modules := map[string]cdx.Component{}
	binaries := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		switch c.Type {
		case cdx.ComponentTypeLibrary:
			modules[c.Name] = c
		case cdx.ComponentTypeApplication:
			binaries[c.BOMRef] = c
		default:
			t.Errorf("unexpected component %s of type %s", c.Name, c.Type)
		}
	}

	t.Run("binaries", func(t *testing.T) {
		var refs []string
		for ref := range binaries {
			refs = append(refs, ref)
		}
		slices.Sort(refs)
		require.Equal(t, []string{
			"linux/amd64/starter", "linux/amd64/teardown", "linux/amd64/worker",
			"linux/arm64/starter", "linux/arm64/teardown", "linux/arm64/worker",
		}, refs)
		for _, a := range arches {
			fs := imageFiles(t, platformImage(t, a.arch))
			for _, prog := range release.Programs {
				c := binaries["linux/"+a.arch+"/"+prog]
				require.Equal(t, version, c.Version)
				sum := sha256Hex(fs["/usr/local/bin/"+prog].data)
				require.Equal(t, sum, (*c.Hashes)[0].Value, "the SBOM's hash of %s/%s is not the image's binary", a.arch, prog)
			}
		}
	})

	t.Run("go version", func(t *testing.T) {
		std, ok := modules["std"]
		require.True(t, ok)
		require.Equal(t, strings.TrimSpace(string(goVersion)), std.Version)
		require.Equal(t, "pkg:golang/std@"+std.Version, std.PackageURL)
	})

	t.Run("modules", func(t *testing.T) {
		for name, c := range modules {
			if name == "std" {
				continue
			}
			// go.mod lists every module of the build (Go ≥ 1.17): the SBOM's
			// versions are go.mod's, the hashes go.sum's.
			require.Equal(t, reqs[name], c.Version, "%s: the SBOM's version is not go.mod's", name)
			require.Equal(t, release.GoPURL(name, c.Version), c.PackageURL)
			want, ok := sums[name+" "+c.Version]
			require.True(t, ok, "go.sum has no hash of %s %s", name, c.Version)
			require.NotNil(t, c.Hashes, name)
			hex, err := release.SumSHA256(want)
			require.NoError(t, err)
			require.Equal(t, hex, (*c.Hashes)[0].Value, name)
		}
		// Every module the programs link, as the go command lists them, is in
		// the SBOM: the direct requires among them by name, as a reader of
		// go.mod would look for them.
		for _, a := range arches {
			for path, v := range linkedModules(t, a.arch) {
				c, ok := modules[path]
				require.True(t, ok, "the SBOM lacks %s %s (linked for %s)", path, v, a.arch)
				require.Equal(t, v, c.Version, path)
			}
		}
		for _, direct := range []string{"go.temporal.io/sdk", "go.temporal.io/api", "k8s.io/client-go", "k8s.io/apimachinery",
			"sigs.k8s.io/controller-runtime", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/prometheus/client_golang"} {
			c, ok := modules[direct]
			require.True(t, ok, "the SBOM lacks %s", direct)
			require.Equal(t, reqs[direct], c.Version, direct)
		}
		// Requires only the tests use are not in the image. (testify is: the
		// Temporal SDK's internal package imports it.)
		for _, testOnly := range []string{"github.com/chromedp/chromedp", "github.com/compose-spec/compose-go/v2"} {
			_, ok := modules[testOnly]
			require.False(t, ok, "the SBOM lists %s, which only tests use", testOnly)
		}
		// The CA roots' module.
		_, ok := modules[release.CABundleModule]
		require.True(t, ok, "the SBOM lacks %s", release.CABundleModule)
	})

	t.Run("dependencies", func(t *testing.T) {
		deps := map[string][]string{}
		for _, d := range *bom.Dependencies {
			deps[d.Ref] = *d.Dependencies
		}
		for ref := range binaries {
			require.Contains(t, deps["image"], ref)
			require.Contains(t, deps[ref], release.GoPURL("go.temporal.io/sdk", reqs["go.temporal.io/sdk"]), ref)
		}
	})
}

func TestChecksums(t *testing.T) {
	dir, res := cut(t)
	require.NoError(t, release.VerifyChecksums(dir))
	b, err := os.ReadFile(filepath.Join(dir, release.ChecksumsName))
	require.NoError(t, err)
	sums, err := release.ParseChecksums(b)
	require.NoError(t, err)
	require.Len(t, sums, len(res.Artifacts)-1, "SHA256SUMS lists every artifact but itself")
	for _, a := range res.Artifacts[:len(res.Artifacts)-1] {
		require.Contains(t, sums, a)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "--check", "--strict", release.ChecksumsName)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
}

func TestInstallYAML(t *testing.T) {
	dir, res := cut(t)
	b, err := os.ReadFile(filepath.Join(dir, release.InstallName))
	require.NoError(t, err)
	objs, err := release.SplitYAML(b)
	require.NoError(t, err)
	have := map[string]bool{}
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		have[fmt.Sprintf("%s %s", o["kind"], md["name"])] = true
		labels, _ := md["labels"].(map[string]any)
		require.Equal(t, version, labels["app.kubernetes.io/version"], "%s %s", o["kind"], md["name"])
	}
	for _, want := range []string{
		"CustomResourceDefinition workerpools.ate.dev",
		"CustomResourceDefinition sandboxconfigs.ate.dev",
		"Namespace ate-system",
		"ServiceAccount ate-orchestrator-worker",
		"ServiceAccount ate-orchestrator-starter",
		"ClusterRole ate-orchestrator-worker",
		"ClusterRole ate-orchestrator-starter",
		"ClusterRoleBinding ate-orchestrator-worker",
		"ClusterRoleBinding ate-orchestrator-starter",
		"Deployment ate-orchestrator-worker",
		"Deployment ate-orchestrator-starter",
	} {
		require.True(t, have[want], "install.yaml has no %s", want)
	}

	// The image is the archive's, by digest, read from the archive itself.
	digest, err := release.IndexDigest(filepath.Join(dir, release.ArchiveName(version)))
	require.NoError(t, err)
	images, err := release.ContainerImages(b)
	require.NoError(t, err)
	require.Len(t, images, 2, "the worker's and the starter's containers")
	for where, img := range images {
		require.Equal(t, image+"@"+digest.String(), img, where)
		require.Equal(t, res.PinnedImage, img, where)
	}
}

// TestChart: the release's chart package renders, with its default values,
// the objects of install.yaml (the same kinds and names, but the Namespace), its containers on
// the image by the archive's digest, versioned as the release.
func TestChart(t *testing.T) {
	dir, res := cut(t)
	tgz := filepath.Join(dir, "ate-orchestrator-"+strings.TrimPrefix(version, "v")+".tgz")
	require.FileExists(t, tgz)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	require.Contains(t, string(sums), filepath.Base(tgz), "the chart is checksummed")

	objs, err := helmchart.RenderChart(tgz, nil)
	require.NoError(t, err)
	rendered := map[string]bool{}
	for _, o := range objs {
		if helmchart.IsHook(o) {
			continue
		}
		rendered[o.GetKind()+" "+o.GetName()] = true
		if o.GetKind() == "Deployment" {
			containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			require.NoError(t, err)
			for _, c := range containers {
				require.Equal(t, res.PinnedImage, c.(map[string]any)["image"], "%s: the image by the archive's digest", o.GetName())
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, release.InstallName))
	require.NoError(t, err)
	installed, err := release.SplitYAML(b)
	require.NoError(t, err)
	for _, o := range installed {
		if o["kind"] == "Namespace" {
			continue // the chart's is the release's: helm install -n ate-system --create-namespace
		}
		key := fmt.Sprintf("%s %s", o["kind"], o["metadata"].(map[string]any)["name"])
		require.True(t, rendered[key], "the chart renders install.yaml's %s", key)
	}
}

func TestMonitoringYAML(t *testing.T) {
	dir, _ := cut(t)
	b, err := os.ReadFile(filepath.Join(dir, release.MonitoringName))
	require.NoError(t, err)
	objs, err := release.SplitYAML(b)
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprint(o["apiVersion"], " ", o["kind"]))
	}
	require.Equal(t, []string{"v1 ConfigMap", "monitoring.coreos.com/v1 PrometheusRule"}, kinds)
}

// TestRecutIsByteIdentical cuts the release again, into another
// directory, from the same checkout with the same Go build cache: every
// artifact has the same bytes. That shows that the link and every step
// after it (the image's layers and their tar and gzip encoding, its config
// and index, the SBOM, install.yaml, the chart, monitoring.yaml,
// SHA256SUMS) depend on the commit alone, not on where or when the cut
// runs. It does not show that a build from an empty cache, or on another
// machine, compiles the same packages: the second cut's compiled packages
// come from the cache the first filled: TestReproducibleFromAnEmptyBuildCache
// shows that, when asked.
func TestRecutIsByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a second release build")
	}
	dir, res := cut(t)
	requireSameRelease(t, dir, res, t.TempDir())
}

// TestReproducibleFromAnEmptyBuildCache cuts the release again with an
// empty Go build cache of its own, so that every package is compiled
// again for both platforms, and finds every artifact byte-identical to the
// first cut's: the digest in a published install.yaml can be rebuilt from
// the commit with the same Go toolchain. It runs only when asked
// (ATE_RELEASE_COLD=1): the compiles took 11.5 minutes on 2 busy cores.
// The work tree must not change while it runs: a cut of a tree with
// uncommitted changes is labelled COMMIT-dirty, and a change between the
// two cuts makes them differ.
func TestReproducibleFromAnEmptyBuildCache(t *testing.T) {
	if os.Getenv("ATE_RELEASE_COLD") != "1" {
		t.Skip("ATE_RELEASE_COLD=1 runs it: a release cut that compiles every package for both platforms from an empty build cache")
	}
	dir, res := cut(t)
	t.Setenv("GOCACHE", t.TempDir())
	requireSameRelease(t, dir, res, t.TempDir())
}

// requireSameRelease cuts the release into again and requires every
// artifact to have the bytes of the first cut's, in dir.
func requireSameRelease(t *testing.T, dir string, res *release.Result, again string) {
	t.Helper()
	res2 := cutRelease(t, again)
	require.Equal(t, res.IndexDigest, res2.IndexDigest)
	require.Equal(t, res.ManifestDigests, res2.ManifestDigests)
	for _, a := range res.Artifacts {
		b1, err := os.ReadFile(filepath.Join(dir, a))
		require.NoError(t, err)
		b2, err := os.ReadFile(filepath.Join(again, a))
		require.NoError(t, err)
		require.True(t, string(b1) == string(b2), "%s differs between two builds", a)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
