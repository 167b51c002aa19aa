package image

import (
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

// TestUnpackHostImage: the host's image is found in the shapes a release
// archive may take (one image per platform in index.json, or an index of
// them nested in it), and the rewritten layout names it alone. It needs
// no podman.
func TestUnpackHostImage(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	image := func(arch string) v1.Image {
		img, err := random.Image(64, 1)
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		img, err = mutate.ConfigFile(img, cf)
		require.NoError(t, err)
		return img
	}
	host, foreign := image(runtime.GOARCH), image(other)
	hostDigest, err := host.Digest()
	require.NoError(t, err)
	hostConfig, err := host.ConfigName()
	require.NoError(t, err)

	for _, tt := range []struct {
		name    string
		write   func(t *testing.T, p layout.Path)
		wantErr string
	}{
		{name: "an image per platform", write: func(t *testing.T, p layout.Path) {
			require.NoError(t, p.AppendImage(foreign))
			require.NoError(t, p.AppendImage(host))
		}},
		{name: "a nested index", write: func(t *testing.T, p layout.Path) {
			idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
				mutate.IndexAddendum{Add: foreign, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}},
				mutate.IndexAddendum{Add: host, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
			require.NoError(t, p.AppendIndex(idx))
		}},
		{name: "no image for the host", write: func(t *testing.T, p layout.Path) {
			require.NoError(t, p.AppendImage(foreign))
		}, wantErr: "has 0 images for linux/" + runtime.GOARCH},
		{name: "two images for the host", write: func(t *testing.T, p layout.Path) {
			require.NoError(t, p.AppendImage(host))
			require.NoError(t, p.AppendImage(image(runtime.GOARCH)))
		}, wantErr: "has 2 images for linux/" + runtime.GOARCH},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
			require.NoError(t, err)
			tt.write(t, p)
			archive := filepath.Join(dir, "ate-orchestrator-v9.9.9.oci.tar")
			require.NoError(t, tarDir(filepath.Join(dir, "layout"), archive))

			got, err := unpackHostImage(archive, filepath.Join(dir, "unpacked"))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, hostDigest, got.Digest)
			require.Equal(t, hostConfig.Hex, got.ID)
			require.ElementsMatch(t, []string{"linux/" + runtime.GOARCH, "linux/" + other}, got.Platforms)

			// What podman reads: a layout naming the host's image alone.
			lp, err := layout.FromPath(got.Dir)
			require.NoError(t, err)
			idx, err := lp.ImageIndex()
			require.NoError(t, err)
			im, err := idx.IndexManifest()
			require.NoError(t, err)
			require.Len(t, im.Manifests, 1)
			require.Equal(t, hostDigest, im.Manifests[0].Digest)
			img, err := idx.Image(hostDigest)
			require.NoError(t, err)
			_, err = img.RawConfigFile()
			require.NoError(t, err)
		})
	}
}

func TestVersionOf(t *testing.T) {
	for _, tt := range []struct{ path, want, wantErr string }{
		{path: "_out/release/ate-orchestrator-v0.1.0.oci.tar", want: "v0.1.0"},
		{path: "/tmp/x/ate-orchestrator-v0.1.0-3-g848c611-dirty.oci.tar", want: "v0.1.0-3-g848c611-dirty"},
		{path: "/tmp/image.tar", wantErr: "not named ate-orchestrator-<version>.oci.tar"},
	} {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			got, err := versionOf(tt.path)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
