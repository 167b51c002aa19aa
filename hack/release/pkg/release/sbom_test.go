package release

import (
	"bytes"
	"debug/buildinfo"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/stretchr/testify/require"
)

func TestSBOM(t *testing.T) {
	sum := "h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0="
	info := func(deps ...*debug.Module) *buildinfo.BuildInfo {
		return &buildinfo.BuildInfo{GoVersion: "go1.26.8", Path: "ate.dev/orchestrator/cmd/worker",
			Main: debug.Module{Path: "ate.dev/orchestrator"}, Deps: deps,
			Settings: []debug.BuildSetting{{Key: "CGO_ENABLED", Value: "0"}}}
	}
	uuid := &debug.Module{Path: "github.com/google/uuid", Version: "v1.6.0", Sum: sum}
	replaced := &debug.Module{Path: "example.com/old", Version: "v1.0.0",
		Replace: &debug.Module{Path: "example.com/new", Version: "v1.0.1", Sum: sum}}
	in := SBOMInput{
		Metadata:    Metadata{Version: "v0.1.0", Revision: "abc", Source: "https://example.com", Created: time.Unix(1764583199, 0)},
		Image:       "ghcr.io/ate-dev/ate-orchestrator",
		IndexDigest: "sha256:" + strings.Repeat("ab", 32),
		Binaries: []Binary{
			{Platform: Platform{"linux", "amd64"}, Name: "worker", SHA256: "11", Info: info(uuid, replaced)},
			{Platform: Platform{"linux", "arm64"}, Name: "worker", SHA256: "22", Info: info(uuid)},
		},
		CABundle: debug.Module{Path: CABundleModule, Version: "v0.0.0-20261030153154-30a33513ff6d", Sum: sum},
	}
	bom, err := SBOM(in)
	require.NoError(t, err)
	require.Equal(t, "pkg:oci/ate-orchestrator@sha256%3A"+strings.Repeat("ab", 32)+"?repository_url=ghcr.io%2Fate-dev%2Fate-orchestrator&tag=v0.1.0",
		bom.Metadata.Component.PackageURL)
	require.Equal(t, "2025-12-01T09:59:59Z", bom.Metadata.Timestamp)
	// The image and the binaries are the orchestrator's, under its LICENSE.
	apache := &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}}
	require.Equal(t, apache, bom.Metadata.Component.Licenses)

	var refs []string
	for _, c := range *bom.Components {
		refs = append(refs, c.BOMRef)
	}
	// Binaries first, then modules by purl; a replaced module is listed as
	// its replacement, what the binary holds.
	require.Equal(t, []string{
		"linux/amd64/worker", "linux/arm64/worker",
		"pkg:golang/example.com/new@v1.0.1",
		"pkg:golang/github.com/google/uuid@v1.6.0",
		"pkg:golang/golang.org/x/crypto/x509roots/fallback@v0.0.0-20261030153154-30a33513ff6d",
		"pkg:golang/std@go1.26.8",
	}, refs)
	require.Equal(t, apache, (*bom.Components)[0].Licenses)
	uuidC := (*bom.Components)[3]
	require.Nil(t, uuidC.Licenses, "a module's license is its own, not asserted")
	require.Equal(t, "348bda24330eb231c0f27d630212d2833ac0cf2d4782bfa136b6f9edefbde05d", (*uuidC.Hashes)[0].Value)

	deps := map[string][]string{}
	for _, d := range *bom.Dependencies {
		deps[d.Ref] = *d.Dependencies
	}
	require.Equal(t, []string{"linux/amd64/worker", "linux/arm64/worker",
		"pkg:golang/golang.org/x/crypto/x509roots/fallback@v0.0.0-20261030153154-30a33513ff6d"}, deps["image"])
	require.Equal(t, []string{"pkg:golang/github.com/google/uuid@v1.6.0", "pkg:golang/std@go1.26.8"}, deps["linux/arm64/worker"])

	// One image, one SBOM: the same input encodes to the same bytes.
	dir := t.TempDir()
	require.NoError(t, WriteSBOM(bom, filepath.Join(dir, "a.json")))
	bom2, err := SBOM(in)
	require.NoError(t, err)
	require.NoError(t, WriteSBOM(bom2, filepath.Join(dir, "b.json")))
	a, b := readFile(t, filepath.Join(dir, "a.json")), readFile(t, filepath.Join(dir, "b.json"))
	require.Equal(t, a, b)
	var decoded cdx.BOM
	require.NoError(t, cdx.NewBOMDecoder(bytes.NewReader(a), cdx.BOMFileFormatJSON).Decode(&decoded))
	require.Equal(t, cdx.SpecVersion1_6, decoded.SpecVersion)

	// Two sums for one module version: the binaries disagree, refuse.
	in.Binaries[1].Info = info(&debug.Module{Path: "github.com/google/uuid", Version: "v1.6.0", Sum: "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="})
	_, err = SBOM(in)
	require.ErrorContains(t, err, "two sums")
}
